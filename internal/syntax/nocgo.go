//go:build !cgo

package syntax

// diffpal parses changed files with tree-sitter, whose grammars are C
// code: it must be built with cgo and a C compiler (gcc or clang). This
// undefined name makes a build without cgo stop here, naming the fix,
// instead of shipping a reviewer that silently lost its syntax-aware rules.
var _ = diffpal_needs_cgo__install_gcc_and_build_with_CGO_ENABLED_1
