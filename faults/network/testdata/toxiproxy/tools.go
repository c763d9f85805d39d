//go:build tools

// Package tools pins Toxiproxy's server command for `go build`.
package tools

import _ "github.com/Shopify/toxiproxy/v2/cmd/server"
