// Command printversion prints version.Version(); the version tests build it
// with -ldflags -X to prove the Makefile's linker flag reaches the variable.
package main

import (
	"fmt"

	"github.com/talosc/talosc/pkg/version"
)

func main() {
	fmt.Println(version.Version())
}
