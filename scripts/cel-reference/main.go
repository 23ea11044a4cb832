// Command cel-reference prints what kube-scheduler v1.36.3's CEL for device selectors
// (k8s.io/dynamic-resource-allocation/cel v0.36.3 on cel-go v0.26.0, DRAConsumableCapacity on
// as in 1.36) says of each expression, one per stdin line, evaluated against a fixed device
// (the one tests/dra/test_cel_go_texts.py builds): a JSON line each, with the compile error,
// the runtime error or the result, and cel-go's actual cost. Built against v0.37.2 (cel-go
// v0.29.2: kube-scheduler v1.37.2's) it prints the same file.
//
//	cd scripts/cel-reference && go build -o /tmp/cel-reference . &&
//	  python ../../tests/dra/test_cel_go_texts.py --expressions | /tmp/cel-reference \
//	  > ../../tests/dra/cel_go_reference.jsonl
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
)

func main() {
	compiler := cel.GetCompiler(cel.Features{EnableConsumableCapacity: true})
	dev := cel.Device{
		Driver: "gpu.example.com",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model":                {StringValue: ptr.To("a100")},
			"index":                {IntValue: ptr.To[int64](3)},
			"big":                  {IntValue: ptr.To[int64](9223372036854775807)},
			"healthy":              {BoolValue: ptr.To(true)},
			"driverVersion":        {VersionValue: ptr.To("1.2.3")},
			"example.com/pcieRoot": {StringValue: ptr.To("root-1")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory":            {Value: resource.MustParse("80Gi")},
			"example.com/slots": {Value: resource.MustParse("7")},
		},
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		expr := sc.Text()
		res := map[string]any{"expression": expr}
		c := compiler.CompileCELExpression(expr, cel.Options{DisableCostEstimation: true})
		if c.Error != nil {
			res["compile"] = c.Error.Error()
		} else {
			ok, details, err := c.DeviceMatches(context.Background(), dev)
			if details != nil && details.ActualCost() != nil {
				res["cost"] = *details.ActualCost()
			}
			if err != nil {
				res["runtime"] = err.Error()
			} else {
				res["result"] = ok
			}
		}
		if err := out.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}
