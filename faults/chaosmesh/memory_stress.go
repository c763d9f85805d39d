package chaosmesh

import (
	"regexp"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// MemoryStressParams configure chaosmesh.memory_stress: a StressChaos
// whose memory stressors take host memory inside the picked pods' cgroups
// (stress-ng vm workers), pushing them towards their memory limit.
//
//	params: {namespace: llm, selector: app=vllm, size: 2GB, workers: 1}
type MemoryStressParams struct {
	Target `json:",inline"`
	// Workers is the number of stress-ng vm workers.
	Workers int `json:"workers,omitempty" doc:"stress-ng memory workers" default:"1"`
	// Size is the memory each worker takes: bytes with a unit (B, KB,
	// KiB, MB, MiB, GB, GiB, TB, TiB) or a percentage of the total.
	Size string `json:"size" doc:"memory each worker takes: e.g. 512MB, 2GiB, or 50% of the total"`
	// OOMScoreAdj is the workers' oom_score_adj.
	OOMScoreAdj *int `json:"oom_score_adj,omitempty" doc:"oom_score_adj of the workers (-1000 to 1000)"`
	// ContainerNames restricts the stress to these containers.
	ContainerNames []string `json:"container_names,omitempty" doc:"containers to stress (default: the first of each pod)"`
}

var sizeRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)|[0-9]+(\.[0-9]+)?%)$`)

// WithDefaults implements Params.
func (p MemoryStressParams) WithDefaults() MemoryStressParams {
	p.Target = p.Target.withDefaults()
	if p.Workers == 0 {
		p.Workers = 1
	}
	return p
}

// Validate implements Params.
func (p MemoryStressParams) Validate() error {
	ps := p.Target.problems()
	ps = append(ps, workerProblems(p.Workers)...)
	if !sizeRE.MatchString(p.Size) {
		ps.AddNamed("size", ": %q, want bytes with a unit (e.g. 512MB, 2GiB) or a percentage (50%%)", p.Size)
	}
	if p.OOMScoreAdj != nil && (*p.OOMScoreAdj < -1000 || *p.OOMScoreAdj > 1000) {
		ps.AddNamed("oom_score_adj", ": %d, want -1000 to 1000", *p.OOMScoreAdj)
	}
	return ps.Err()
}

// Chaos implements Params.
func (p MemoryStressParams) Chaos() Chaos {
	mem := map[string]any{"workers": int64(p.Workers), "size": p.Size}
	if p.OOMScoreAdj != nil {
		mem["oomScoreAdj"] = int64(*p.OOMScoreAdj)
	}
	return Chaos{Kind: StressChaos, Target: p.Target, Fields: stressFields(map[string]any{"memory": mem}, p.ContainerNames)}
}

// memoryStressType describes its fault type for Types.
func memoryStressType() faults.Type {
	return chaosType[MemoryStressParams](TypeMemoryStress, "take memory inside pods' containers (Chaos Mesh StressChaos memory)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nsize: 2GB")
}

// maxWorkers is stress-ng's limit on workers, as Chaos Mesh checks it.
const maxWorkers = 8192

func workerProblems(n int) field.Problems {
	if n < 1 || n > maxWorkers {
		return field.Problems{field.Errorf("workers", "%s: %d, want 1 to %d", field.Path("workers"), n, maxWorkers)}
	}
	return nil
}

// stressFields returns a StressChaos spec's fields for stressors.
func stressFields(stressors map[string]any, containers []string) map[string]any {
	f := map[string]any{"stressors": stressors}
	if len(containers) > 0 {
		f["containerNames"] = toAny(containers)
	}
	return f
}
