// Command sexpr prints the tree-sitter S-expression of a file, the shape
// a rule's query is written against: go run ./bench/sexpr GRAMMAR FILE
// (grammars: go, python, javascript, typescript, tsx, java, kotlin, ruby,
// php, csharp, shell, dockerfile, yaml, hcl).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/sexpr GRAMMAR FILE")
		os.Exit(2)
	}
	src, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t, err := syntax.Parse(context.Background(), os.Args[1], src)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer t.Close()
	fmt.Println(t.Root().SExpr())
}
