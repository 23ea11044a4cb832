"""Dynamic Resource Allocation's low-level parts: device selectors in CEL (``cel``) and
the structured-parameters allocator (``allocator``), as upstream keeps them in
``k8s.io/dynamic-resource-allocation``. They read API objects only, never the core."""
