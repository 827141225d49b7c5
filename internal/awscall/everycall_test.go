package awscall_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// sdkServices are the packages of the AWS services the library calls; a
// method whose last parameter is ...func(*<service>.Options) is an AWS
// call.
var sdkServices = map[string]bool{
	"github.com/aws/aws-sdk-go-v2/service/sqs":        true,
	"github.com/aws/aws-sdk-go-v2/service/sns":        true,
	"github.com/aws/aws-sdk-go-v2/service/dynamodb":   true,
	"github.com/aws/aws-sdk-go-v2/service/s3":         true,
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch": true,
}

// TestEveryAWSCallGoesThroughTheRule type-checks the library (not the test
// harness, the examples, the tests, or the test kits sqstest and
// schedules/schedulestest, whose calls go to their own in-memory fakes or
// stand for the emulated service's) and fails on any AWS call made
// without call options: such a call keeps the SDK's retryer, so its
// retries are neither the library's rule nor counted. A call passes the
// rule's Off option (awscall.SQS and its siblings pass it, as do
// sqsbatch's calls), or forwards the options it was given (a counting
// client in between).
func TestEveryAWSCallGoesThroughTheRule(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole library")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type pkg struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Module                  *struct{ Path string }
	}
	exports := map[string]string{}
	var ours []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/sqsworker/sqsworker" {
			rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
			first, _, _ := strings.Cut(rel, "/")
			// The test kits' calls are the emulated service's own (the
			// in-memory Scheduler delivers into the SQS client it is given).
			if first != "harness" && first != "examples" && first != "bench" && first != "sqstest" && rel != "schedules/schedulestest" {
				ours = append(ours, p)
			}
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var faults []string
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if calls(info, call.Fun, "github.com/sqsworker/sqsworker/internal/awscall") {
					return true // the rule's own helpers, which pass the Off option
				}
				sig, ok := info.TypeOf(call.Fun).(*types.Signature)
				if !ok || !sig.Variadic() || !isOptions(sig.Params().At(sig.Params().Len()-1).Type()) {
					return true
				}
				if call.Ellipsis == token.NoPos && len(call.Args) < sig.Params().Len() {
					pos := fset.Position(call.Pos())
					rel, _ := filepath.Rel(root, pos.Filename)
					faults = append(faults, fmt.Sprintf("%s:%d: an AWS call without call options keeps the SDK's retryer: make it through awscall (awscall.SQS(ctx, rule, client.Op, in), or its DynamoDB, SNS, S3) or pass the service's Off option", rel, pos.Line))
				}
				return true
			})
		}
	}
	sort.Strings(faults)
	for _, f := range faults {
		t.Error(f)
	}
}

// calls reports whether fun names a function of the package at path.
func calls(info *types.Info, fun ast.Expr, path string) bool {
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	pkg, ok := info.Uses[id].(*types.PkgName)
	return ok && pkg.Imported().Path() == path
}

// isOptions reports whether t is []func(*X.Options) for an SDK service X.
func isOptions(t types.Type) bool {
	s, ok := t.(*types.Slice)
	if !ok {
		return false
	}
	fn, ok := s.Elem().(*types.Signature)
	if !ok || fn.Params().Len() != 1 {
		return false
	}
	ptr, ok := fn.Params().At(0).Type().(*types.Pointer)
	if !ok {
		return false
	}
	named, ok := ptr.Elem().(*types.Named)
	return ok && named.Obj().Name() == "Options" && named.Obj().Pkg() != nil && sdkServices[named.Obj().Pkg().Path()]
}
