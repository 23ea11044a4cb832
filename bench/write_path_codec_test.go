// What the encoding of a write costs kube-apiserver itself, without the HTTP and the
// storage around it: decoding a Binding from JSON (strict, as the server does for
// fieldValidation Warn) or protobuf, encoding a pending Pod or the Binding's Status
// answer to JSON or protobuf, with client-go v0.37.2's serializers. It explains
// bench/write_path.py's result (docs/performance.md, "The write path"). Run, in a scratch
// directory holding this file:
//
//	go mod init codec && go get k8s.io/client-go@v0.37.2 && go test -bench . -count 5
package codec

import (
	"bytes"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

var jsonBody = []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"pod-00001","namespace":"sched-1","uid":"0f8a2c4e-1b3d-4e5f-8a9b-0c1d2e3f4a5b"},"target":{"apiVersion":"v1","kind":"Node","name":"node-0007"}}`)

func pbBody() []byte {
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sched-1", Name: "pod-00001", UID: types.UID("0f8a2c4e-1b3d-4e5f-8a9b-0c1d2e3f4a5b")},
		Target:     v1.ObjectReference{Kind: "Node", Name: "node-0007", APIVersion: "v1"},
	}
	var buf bytes.Buffer
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	if err := scheme.Codecs.EncoderForVersion(s, v1.SchemeGroupVersion).Encode(b, &buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

var gvk = v1.SchemeGroupVersion.WithKind("Binding")

func BenchmarkDecodeBindingJSONStrict(b *testing.B) {
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{Strict: true})
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Decode(jsonBody, &gvk, &v1.Binding{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBindingJSON(b *testing.B) {
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Decode(jsonBody, &gvk, &v1.Binding{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBindingProtobuf(b *testing.B) {
	body := pbBody()
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Decode(body, &gvk, &v1.Binding{}); err != nil {
			b.Fatal(err)
		}
	}
}

func pod() *v1.Pod {
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "sched-1", Name: "pod-00001", UID: "0f8a2c4e-1b3d-4e5f-8a9b-0c1d2e3f4a5b", ResourceVersion: "123456", Labels: map[string]string{"app": "x"}, CreationTimestamp: metav1.Now(),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Update", APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}`)}}}},
		Spec:   v1.PodSpec{SchedulerName: "nobody", Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}}}}},
		Status: v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBurstable, Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "0/100 nodes are available: 100 Insufficient cpu."}}},
	}
}

func benchEncode(b *testing.B, s runtime.Serializer, o runtime.Object) {
	var buf bytes.Buffer
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := s.Encode(o, &buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}

func BenchmarkEncodePodJSON(b *testing.B) {
	benchEncode(b, json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}), pod())
}

func BenchmarkEncodePodProtobuf(b *testing.B) {
	benchEncode(b, protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), pod())
}

func status() *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess, Code: 201}
}

func BenchmarkEncodeStatusJSON(b *testing.B) {
	benchEncode(b, json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}), status())
}

func BenchmarkEncodeStatusProtobuf(b *testing.B) {
	benchEncode(b, protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), status())
}
