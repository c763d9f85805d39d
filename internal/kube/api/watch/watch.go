// Package watch holds the events of a Kubernetes watch.
package watch

// EventType is the kind of a watch event.
type EventType string

// Event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one change a watch reports. Object is the object (a pointer to
// the watched kind), or, for an Error, a *metav1.Status.
type Event struct {
	Type   EventType
	Object any
}

// Interface is a running watch: its events come on ResultChan, which is
// closed when the watch ends (the server closed it, or Stop was called).
type Interface interface {
	// Stop ends the watch; safe to call more than once.
	Stop()
	// ResultChan returns the channel of events.
	ResultChan() <-chan Event
}
