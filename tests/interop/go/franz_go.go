//go:build tools

// Package interop holds the Go clients' tests against kafkaiq. This file
// only keeps franz-go in go.mod (go mod tidy keeps what a build-tagged file
// imports): its own pkg/kgo test suite is what runs against kafkaiq, with
// `go test github.com/twmb/franz-go/pkg/kgo` from this module.
package interop

import _ "github.com/twmb/franz-go/pkg/kgo"
