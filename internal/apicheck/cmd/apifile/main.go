// Command apifile prints the public API of the repository (see package
// apicheck): `go run ./internal/apicheck/cmd/apifile` writes the lines,
// `-count` the exported-name count per package.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sqsworker/sqsworker/internal/apicheck"
)

func main() {
	root := flag.String("root", ".", "repository root")
	count := flag.Bool("count", false, "print the exported-name count per package instead of the lines")
	flag.Parse()
	lines, err := apicheck.Collect(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apifile:", err)
		os.Exit(1)
	}
	if *count {
		c := apicheck.Counts(lines)
		pkgs := make([]string, 0, len(c))
		total := 0
		for p, n := range c {
			pkgs = append(pkgs, p)
			total += n
		}
		sort.Slice(pkgs, func(i, j int) bool { return c[pkgs[i]] > c[pkgs[j]] || c[pkgs[i]] == c[pkgs[j]] && pkgs[i] < pkgs[j] })
		for _, p := range pkgs {
			fmt.Printf("%4d %s\n", c[p], strings.TrimPrefix(p, apicheck.Module+"/"))
		}
		fmt.Printf("%4d total\n", total)
		return
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}
