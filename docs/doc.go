// Package docs holds weir's internals guide (DESIGN.md), lock order
// (LOCKS.md) and served APIs (API.md). It has no code: its test checks
// that the code references the documents make, `path/file.go:Name` or
// `path/file.go:Type.Method`, name declarations that exist, so a renamed
// function cannot leave a walk through the code pointing nowhere.
package docs
