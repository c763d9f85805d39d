package gpu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/llmchaos/llmchaos/faults"
)

// KindBalloonToken is the RevertSpec kind that Inject records before it
// starts a balloon process: its data is a TokenSpec, and its Reverter,
// RevertBalloonToken, ends every process whose argv carries the token.
const KindBalloonToken = "gpu-balloon-token"

// FaultTokenFlag is the argument through which a balloon process carries its
// token (`--fault-token=TOKEN`); the gpu-balloon command accepts and
// otherwise ignores it.
const FaultTokenFlag = "--fault-token"

// TokenSpec is the data of a KindBalloonToken spec.
type TokenSpec struct {
	// Token is 32 lower-case hex digits, unique to one injection.
	Token string `json:"token"`
	// Name says what the process is, for people reading the journal.
	Name string `json:"name,omitempty"`
}

// tokenRE is what a token looks like; a spec with anything else is refused,
// so that a damaged journal can never make the scan match broadly.
var tokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// newToken returns a fresh token. It comes from crypto/rand, not from the
// run's seeded generator: it names one injection and must differ between
// two runs with the same seed, and it decides nothing about the run.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make balloon token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// tokenRevertSpec returns the KindBalloonToken spec of token.
func tokenRevertSpec(token, name string) (faults.RevertSpec, error) {
	data, err := json.Marshal(TokenSpec{Token: token, Name: name})
	if err != nil {
		return faults.RevertSpec{}, fmt.Errorf("encode balloon token spec: %w", err)
	}
	return faults.RevertSpec{Kind: KindBalloonToken, Data: data}, nil
}

// RevertBalloonToken is the Reverter of KindBalloonToken. It looks through
// /proc for processes whose argv holds `--fault-token=TOKEN` and ends each
// as faults.RevertProcess does (SIGTERM, SIGKILL after the grace, through a
// pidfd after a start-time check). No such process counts as reverted.
func RevertBalloonToken(ctx context.Context, data json.RawMessage) error {
	var s TokenSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("balloon token spec: %w", err)
	}
	if !tokenRE.MatchString(s.Token) {
		return fmt.Errorf("balloon token spec: token %q is not 32 hex digits", s.Token)
	}
	return endProcessesWithArg(ctx, FaultTokenFlag+"="+s.Token, s.Name)
}

// Reverters returns the Reverter of each RevertSpec kind this package
// defines (KindBalloonToken). The faults also write kinds defined
// elsewhere: the balloon's pid as faults.KindProcess (in
// faults.BuiltinReverters), gpu.hang's frozen process as
// replica.KindSignalCont (in replica.Reverters). The map is new on every
// call, so the caller may merge it into its own.
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{KindBalloonToken: RevertBalloonToken}
}
