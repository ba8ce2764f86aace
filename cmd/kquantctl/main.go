// Command kquantctl runs kquant's quantization engine without a cluster: on the
// local GPU or on the pure-Go reference backend.
package main

import (
	"fmt"
	"os"

	"github.com/kquant/kquant/cmd/internal/version"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println(version.String("kquantctl"))
		return
	}
	fmt.Fprintln(os.Stderr, "usage: kquantctl version")
	os.Exit(2)
}
