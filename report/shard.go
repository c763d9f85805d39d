package report

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shard says which part of a load split over several processes a run was
// (llmchaos load --shard INDEX/COUNT: it sent the arrivals k of the whole
// seeded schedule with k mod COUNT == INDEX; see workload.Shard).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// StartAt is the wall-clock instant every shard was told to start at
	// (--start-at), the zero of the run's clock; absent when the shard
	// started on its own.
	StartAt time.Time `json:"start_at,omitzero"`
}

// String returns s as INDEX/COUNT.
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// CheckShards checks that runs about to be merged are the shards of one
// load: every run is a shard (or none is: then there is nothing to check),
// all of one seed and one count, each index from 0 to count−1 present
// exactly once, all started at one instant. names label the runs in
// messages (file names; "run N" where missing).
//
// Every problem is reported at once in err. An incomplete set is an error
// unless partial: it is then a warning, since the merged report covers
// only part of the load. Shards that started on their own (no --start-at)
// are merged with a warning: their time series add up second by second
// from each one's own start.
func CheckShards(names []string, docs []*Document, partial bool) (warnings []string, err error) {
	name := func(i int) string {
		if i < len(names) && names[i] != "" {
			return names[i]
		}
		return "run " + strconv.Itoa(i+1)
	}
	var sharded, whole []string
	for i, d := range docs {
		if d.Shard != nil {
			sharded = append(sharded, name(i))
		} else {
			whole = append(whole, name(i))
		}
	}
	if len(sharded) == 0 {
		return nil, nil
	}
	if len(whole) > 0 {
		what := "a shard"
		if len(sharded) > 1 {
			what = "shards"
		}
		return nil, fmt.Errorf("%s %s %s (--shard) and %s %s not: merge the shards of one load, or whole runs, not both",
			strings.Join(sharded, ", "), isAre(sharded), what, strings.Join(whole, ", "), isAre(whole))
	}
	var errs []error
	first := docs[0]
	for i, d := range docs[1:] {
		if d.Seed != first.Seed {
			errs = append(errs, fmt.Errorf("%s has seed %d, %s seed %d: shards of one load share its seed (the schedule is drawn from it)", name(i+1), d.Seed, name(0), first.Seed))
		}
		if d.Shard.Count != first.Shard.Count {
			errs = append(errs, fmt.Errorf("%s is shard %s, %s shard %s: shards of one load share its count", name(i+1), d.Shard, name(0), first.Shard))
		}
	}
	count := first.Shard.Count
	seen := make([][]string, count)
	for i, d := range docs {
		if d.Shard.Index < 0 || d.Shard.Index >= count || d.Shard.Count != count {
			if d.Shard.Count == count {
				errs = append(errs, fmt.Errorf("%s: shard %s: the index is outside 0…%d", name(i), d.Shard, count-1))
			}
			continue
		}
		seen[d.Shard.Index] = append(seen[d.Shard.Index], name(i))
	}
	var missing []string
	for i, runs := range seen {
		switch {
		case len(runs) == 0:
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		case len(runs) > 1:
			errs = append(errs, fmt.Errorf("shard %d/%d is given %d times (%s): each shard's requests would count twice", i, count, len(runs), strings.Join(runs, ", ")))
		}
	}
	if len(missing) > 0 && count > 0 && len(errs) == 0 {
		noun := "shard"
		if len(missing) > 1 {
			noun = "shards"
		}
		msg := fmt.Sprintf("%s %s %s missing: the merged report would cover only %d of the load's %d shards", noun, strings.Join(missing, ", "), isAre(missing), count-len(missing), count)
		if partial {
			warnings = append(warnings, msg)
		} else {
			errs = append(errs, errors.New(msg+"; give every shard's report, or --partial to merge what there is"))
		}
	}
	var starts []time.Time
	var alone []string
	for i, d := range docs {
		if d.Shard.StartAt.IsZero() {
			alone = append(alone, name(i))
		} else if !slices.ContainsFunc(starts, d.Shard.StartAt.Equal) {
			starts = append(starts, d.Shard.StartAt)
		}
	}
	if len(starts) > 1 {
		var parts []string
		for i, d := range docs {
			if !d.Shard.StartAt.IsZero() {
				parts = append(parts, name(i)+" at "+d.Shard.StartAt.UTC().Format(time.RFC3339Nano))
			}
		}
		errs = append(errs, fmt.Errorf("the shards were told to start at different instants (%s): shards of one load start at one --start-at", strings.Join(parts, ", ")))
	}
	if len(alone) > 0 {
		warnings = append(warnings, fmt.Sprintf("%s started without --start-at: the merged time series adds each shard's seconds counted from its own start", strings.Join(alone, ", ")))
	}
	return warnings, errors.Join(errs...)
}

func isAre(list []string) string {
	if len(list) == 1 {
		return "is"
	}
	return "are"
}
