// Package schema names API groups, versions and resources.
package schema

// GroupVersion is an API group and version ("" group: the core group).
type GroupVersion struct {
	Group   string
	Version string
}

// String writes gv as the API writes it: "apps/v1", or "v1" for the core group.
func (gv GroupVersion) String() string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.Group + "/" + gv.Version
}

// WithResource returns the resource of gv called resource.
func (gv GroupVersion) WithResource(resource string) GroupVersionResource {
	return GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: resource}
}

// GroupVersionResource names a resource of a group version.
type GroupVersionResource struct {
	Group    string
	Version  string
	Resource string
}

// GroupVersion returns r's group version.
func (r GroupVersionResource) GroupVersion() GroupVersion {
	return GroupVersion{Group: r.Group, Version: r.Version}
}

// String writes r as "pods.v1." or "jobs.v1.batch" (as apimachinery).
func (r GroupVersionResource) String() string {
	return r.Resource + "." + r.Version + "." + r.Group
}
