package gpu

import "github.com/llmchaos/llmchaos/faults"

// Family is the name of this fault family, as faults.Type.Family.
const Family = "gpu"

// Types returns the fault types of this family: the one explicit list of
// them (no init() registration). Each type is described in the file of its
// fault; adding one is that file plus one line here.
func Types() []faults.Type {
	return []faults.Type{
		memoryPressureType(),
		hangType(),
	}
}
