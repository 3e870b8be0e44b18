package kubeupgrade

// ManifestStage orders bootstrap objects for their apply.
func ManifestStage(o map[string]any) int {
	switch o["kind"] {
	case "Namespace", "CustomResourceDefinition":
		return 0
	case "ConfigMap", "Secret":
		return 1
	}
	return 2
}

// ObjectName is an object's namespace/name.
func ObjectName(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	n, _ := md["name"].(string)
	if ns == "" {
		return n
	}
	return ns + "/" + n
}
