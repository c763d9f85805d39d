// Package fields writes field selectors (metadata.name=x) of lists and
// watches.
package fields

// Selector is a field selector.
type Selector string

// String returns s as the API's fieldSelector parameter.
func (s Selector) String() string { return string(s) }

// Everything selects every object.
func Everything() Selector { return "" }

// OneTermEqualSelector selects the objects whose field k is v.
func OneTermEqualSelector(k, v string) Selector { return Selector(k + "=" + v) }
