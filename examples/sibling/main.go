// Command sibling is the harness with a kind of its own, greet: a module
// of its own that builds on the harness through its public entry point
// (package harnesscmd), as a user's module does. See the README, "Writing a
// sibling plugin".
package main

import (
	"github.com/harness-go/harness/harnesscmd"

	_ "example.com/sibling/greet"                     // the kind this module adds
	_ "github.com/harness-go/harness/plugins/bundled" // and the bundled ones
)

func main() { harnesscmd.Main() }
