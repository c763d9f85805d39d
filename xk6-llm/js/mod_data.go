package js

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/grafana/sobek"
)

// newDataModule is `k6/data`: SharedArray.
func newDataModule(vu *VU) *sobek.Object {
	o := vu.rt.NewObject()
	set(o, "SharedArray", vu.sharedArrayConstructor)
	return o
}

// sharedArray is the data of one SharedArray, built once per run and read
// by every VU: each element as its JSON text. Elements are parsed when a
// VU reads them, so a VU holds no copy of the data set.
type sharedArray struct {
	mu    sync.Mutex   // held while the first VU builds it
	owner atomic.Int64 // ID+1 of the VU building it, 0 when none
	built bool
	elems []string // JSON of each element; read-only once built
}

// sharedArray returns the run's SharedArray called name, made empty on
// first use.
func (s *Shared) sharedArray(name string) *sharedArray {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.arrays[name]
	if !ok {
		a = &sharedArray{}
		s.arrays[name] = a
	}
	return a
}

// sharedArrayConstructor is new SharedArray(name, fn), as k6's: fn runs
// once per run, in the first VU whose init code gets there (the others
// wait for it), and must return an array; its elements are kept as JSON
// and every VU reads the same data, each element a frozen copy made on
// access. Only in the init context.
func (vu *VU) sharedArrayConstructor(call sobek.ConstructorCall) *sobek.Object {
	rt := vu.rt
	if !vu.inInit {
		panic(rt.NewGoError(errors.New("new SharedArray must be called in the init context (outside functions)")))
	}
	name := call.Argument(0)
	if sobek.IsUndefined(name) || sobek.IsNull(name) || name.String() == "" {
		panic(rt.NewTypeError("new SharedArray: the first argument must be a non-empty name"))
	}
	fn, ok := sobek.AssertFunction(call.Argument(1))
	if !ok {
		panic(rt.NewTypeError("new SharedArray(%q): the second argument must be a function that returns an array", name.String()))
	}
	a := vu.shared.sharedArray(name.String())
	if a.owner.Load() == int64(vu.ID)+1 {
		panic(rt.NewTypeError("new SharedArray(%q): its function creates the same SharedArray", name.String()))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.built {
		a.owner.Store(int64(vu.ID) + 1)
		defer a.owner.Store(0)
		elems, err := vu.arrayElements(name.String(), fn)
		if err != nil {
			panic(err)
		}
		a.elems, a.built = elems, true
	}
	return rt.NewDynamicArray(&sharedArrayView{vu: vu, elems: a.elems})
}

// arrayElements calls fn and returns the JSON of each element of the
// array it returns (null for what JSON cannot hold, as JSON.stringify of
// an array writes). An exception fn throws is returned as it is; a value
// that is not an array throws a TypeError.
func (vu *VU) arrayElements(name string, fn sobek.Callable) ([]string, error) {
	rt := vu.rt
	v, err := fn(sobek.Undefined())
	if err != nil {
		return nil, err
	}
	o, ok := v.(*sobek.Object)
	if !ok || o.ClassName() != "Array" {
		panic(rt.NewTypeError("new SharedArray(%q): the function must return an array, not %s", name, describe(v)))
	}
	stringify, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	n := int(o.Get("length").ToInteger())
	elems := make([]string, n)
	for i := range n {
		s, err := stringify(sobek.Undefined(), o.Get(fmt.Sprint(i)))
		if err != nil {
			return nil, err
		}
		if sobek.IsUndefined(s) {
			elems[i] = "null"
			continue
		}
		elems[i] = s.String()
	}
	return elems, nil
}

// describe names a value's type for an error message.
func describe(v sobek.Value) string {
	switch {
	case v == nil || sobek.IsUndefined(v):
		return "undefined"
	case sobek.IsNull(v):
		return "null"
	}
	if o, ok := v.(*sobek.Object); ok {
		return "an " + o.ClassName()
	}
	return "a " + v.ExportType().String()
}

// sharedArrayView is one VU's read-only view of a SharedArray: a
// sobek.DynamicArray whose elements are parsed and deep-frozen on access.
type sharedArrayView struct {
	vu     *VU
	elems  []string
	parse  sobek.Callable
	freeze sobek.Callable
}

var _ sobek.DynamicArray = (*sharedArrayView)(nil)

// Len is the array's length.
func (a *sharedArrayView) Len() int { return len(a.elems) }

// Get returns a frozen copy of element idx; undefined out of range.
func (a *sharedArrayView) Get(idx int) sobek.Value {
	if idx < 0 || idx >= len(a.elems) {
		return nil
	}
	rt := a.vu.rt
	if a.parse == nil {
		json := rt.Get("JSON").ToObject(rt)
		a.parse, _ = sobek.AssertFunction(json.Get("parse"))
		a.freeze, _ = sobek.AssertFunction(rt.Get("Object").ToObject(rt).Get("freeze"))
	}
	v, err := a.parse(sobek.Undefined(), rt.ToValue(a.elems[idx]))
	if err != nil {
		panic(err)
	}
	a.deepFreeze(v)
	return v
}

// deepFreeze freezes v and every object it holds.
func (a *sharedArrayView) deepFreeze(v sobek.Value) {
	o, ok := v.(*sobek.Object)
	if !ok {
		return
	}
	for _, k := range o.Keys() {
		a.deepFreeze(o.Get(k))
	}
	if _, err := a.freeze(sobek.Undefined(), o); err != nil {
		panic(err)
	}
}

// Set refuses: a SharedArray is read-only (in a module, strict code, the
// assignment throws a TypeError).
func (a *sharedArrayView) Set(int, sobek.Value) bool { return false }

// SetLen refuses, as Set.
func (a *sharedArrayView) SetLen(int) bool { return false }
