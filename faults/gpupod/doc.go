// Package gpupod is the fault family that takes GPU memory from a
// Kubernetes pod's GPU: gpupod.memory_pressure starts a balloon pod, the
// llmchaos image running `llmchaos gpu-balloon --backend cuda`, on the node
// of each picked target pod, where it holds GPU memory until the revert
// deletes it.
//
// Kubernetes gives a container a GPU through the NVIDIA device plugin, so
// the balloon gets one the same way: it asks for one nvidia.com/gpu (or the
// resource params name) on the target's node. With the plugin's
// time-slicing, several pods share each GPU, and on a node with one GPU
// (or a time-sliced resource per GPU) that is the target's GPU. Where the
// node has several, params.visible_devices pins the balloon to the
// target's GPU by UUID through NVIDIA_VISIBLE_DEVICES and the NVIDIA
// container runtime, without asking the plugin. docs/kubernetes-gpu.md says
// how to set either up and why an ephemeral container in the target pod is
// not the way.
//
// The balloon pod's name is written to the journal before the pod is
// created; the revert, the guard and `llmchaos recover` delete it, and the
// GPU memory is freed when its process ends.
package gpupod
