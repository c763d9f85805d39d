package kube

// NewClusterFrom is newCluster, for the tests of package kube_test.
var NewClusterFrom = newCluster
