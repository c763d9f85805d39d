// Package chaosmesh is the fault family that acts on Kubernetes pods
// through Chaos Mesh (chaos-mesh.org/v1alpha1), the engine clusters already
// run for pod-level chaos: network delay, loss, bandwidth and partition
// (NetworkChaos), pod failure and container kill (PodChaos), memory and CPU
// stress (StressChaos).
//
// A fault picks the pods itself, from its params' namespace and label
// selector with the run's seeded source and the usual selection (one, all,
// count, percent, min_available over Ready pods), refuses pods that are not
// opted in (llmchaos.io/target=true on the pod or its namespace), and
// creates one Chaos Mesh object that names exactly those pods. The object
// is labelled with the run and the fault (llmchaos.io/run, llmchaos.io/fault)
// and its name is written to the journal before it is created, so that the
// run's revert, the guard and `llmchaos recover` delete it; a revert waits
// until the object is gone, that is until Chaos Mesh has undone what it did
// and dropped its finalizer. Without Chaos Mesh's CRDs in the cluster a fault
// fails before it changes anything, with an error that says so (ErrNotInstalled).
//
// Types returns the family's fault types; APICalls the Kubernetes API calls
// they make (the RBAC of deploy/kubernetes grants exactly those).
package chaosmesh
