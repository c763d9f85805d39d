package js

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/grafana/sobek"
	"github.com/grafana/sobek/ast"
	"github.com/grafana/sobek/parser"
)

// requireGlobal is the hidden global through which the generated source of
// a built-in module reaches its per-VU Go exports.
const requireGlobal = "__llmchaos_builtin"

// Program is a parsed and linked script: its main module and every module
// it imports, shared by the runtimes of all VUs (a linked module record is
// read-only; each runtime keeps its own instance). Safe for concurrent use.
type Program struct {
	// Path is the main script's path; Dir the directory relative imports
	// and open() are resolved from.
	Path string
	Dir  string

	main    sobek.CyclicModuleRecord
	modules map[string]module // the built-in table, by import name
	// moduleDir holds the remote modules (https://HOST/PATH is read from
	// moduleDir/HOST/PATH); "" none.
	moduleDir string

	mu     sync.Mutex
	cache  map[string]sobek.ModuleRecord // by absolute path or built-in name
	errs   map[string]error
	pathOf map[sobek.ModuleRecord]string
	asts   map[sobek.ModuleRecord]*ast.Program // of the script's files, for the positions of their imports
}

// EnvModuleDir names the variable that gives the directory of remote
// modules when LoadOptions.ModuleDir (--module-dir) does not.
const EnvModuleDir = "LLMCHAOS_MODULE_DIR"

// LoadOptions configure LoadWith.
type LoadOptions struct {
	// ModuleDir is the directory remote modules are read from, offline:
	// an import of https://jslib.k6.io/k6-utils/1.4.0/index.js reads
	// ModuleDir/jslib.k6.io/k6-utils/1.4.0/index.js (the URL's host and
	// path; its query is dropped). "": $LLMCHAOS_MODULE_DIR, else none.
	ModuleDir string
}

// Load reads, parses and links the script at path and the modules it
// imports, with remote modules from $LLMCHAOS_MODULE_DIR. A syntax error,
// a missing file or an unknown import is a *ScriptError that says where.
func Load(path string) (*Program, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Program, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	if opts.ModuleDir == "" {
		opts.ModuleDir = os.Getenv(EnvModuleDir)
	}
	if opts.ModuleDir != "" {
		if opts.ModuleDir, err = filepath.Abs(opts.ModuleDir); err != nil {
			return nil, fmt.Errorf("module directory: %w", err)
		}
	}
	p := &Program{
		Path: abs, Dir: filepath.Dir(abs), modules: moduleTable(), moduleDir: opts.ModuleDir,
		cache: map[string]sobek.ModuleRecord{}, errs: map[string]error{}, pathOf: map[sobek.ModuleRecord]string{},
		asts: map[sobek.ModuleRecord]*ast.Program{},
	}
	m, err := p.resolve(nil, abs)
	if err != nil {
		return nil, scriptError("load", err)
	}
	cm, ok := m.(sobek.CyclicModuleRecord)
	if !ok {
		return nil, &ScriptError{Pos: abs, Msg: "the script is not a JavaScript module"}
	}
	if err := cm.Link(); err != nil {
		return nil, scriptError("link", err)
	}
	p.main = cm
	return p, nil
}

// resolve is sobek's HostResolveImportedModule: a specifier that starts
// with ".", ".." or "/" is a file relative to the importing module, any
// other is a name in the table of built-in modules. An unknown name or a
// missing file is a *ScriptError at the import statement that asked for
// it.
func (p *Program) resolve(referrer any, spec string) (sobek.ModuleRecord, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key, err := p.key(referrer, spec)
	if err != nil {
		return nil, p.importError(referrer, spec, err)
	}
	if m, ok := p.cache[key]; ok {
		return m, nil
	}
	if err, ok := p.errs[key]; ok {
		return nil, p.importError(referrer, spec, err)
	}
	m, err := p.parse(key)
	if err != nil {
		p.errs[key] = err
		return nil, p.importError(referrer, spec, err)
	}
	p.cache[key] = m
	p.pathOf[m] = key
	return m, nil
}

// errModuleNotFound is a relative import whose file does not exist.
var errModuleNotFound = errors.New("not found")

// importError places a failed resolution at the import statement of spec
// in referrer. An error that already says where (a syntax error inside the
// imported file) is returned as it is.
func (p *Program) importError(referrer any, spec string, err error) error {
	if _, ok := errors.AsType[*ScriptError](err); ok {
		return err
	}
	if !errors.Is(err, errModuleNotFound) && !errors.Is(err, errUnknownModule) && !isRemovedModule(err) {
		return err
	}
	r, ok := referrer.(sobek.ModuleRecord)
	if !ok {
		return err
	}
	body := p.asts[r]
	if body == nil || body.File == nil {
		return err
	}
	for _, st := range body.Body {
		var idx int
		var from string
		switch d := st.(type) {
		case *ast.ImportDeclaration:
			idx, from = int(d.Idx0()), d.ModuleSpecifier.String()
			if d.FromClause != nil {
				from = d.FromClause.ModuleSpecifier.String()
			}
		case *ast.ExportDeclaration:
			if d.FromClause == nil {
				continue
			}
			idx, from = int(d.Idx0()), d.FromClause.ModuleSpecifier.String()
		default:
			continue
		}
		if from == spec {
			pos := body.File.Position(idx - body.File.Base())
			return &ScriptError{Pos: fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column), Msg: "import: " + err.Error()}
		}
	}
	return err
}

// key names the module spec refers to from referrer: an absolute path or
// a built-in name.
func (p *Program) key(referrer any, spec string) (string, error) {
	if filepath.IsAbs(spec) {
		return filepath.Clean(spec), nil
	}
	if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") {
		dir := p.Dir
		if r, ok := referrer.(sobek.ModuleRecord); ok {
			if from, ok := p.pathOf[r]; ok && filepath.IsAbs(from) {
				dir = filepath.Dir(from)
			}
		}
		return filepath.Join(dir, spec), nil
	}
	if m, ok := p.modules[spec]; ok {
		if m.removed != "" {
			return "", removedModuleError(m.removed)
		}
		return spec, nil
	}
	for _, m := range p.modules {
		for _, prefix := range m.prefixes {
			if strings.HasPrefix(spec, prefix) {
				return m.name, nil
			}
		}
	}
	if strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://") {
		return p.remoteKey(spec)
	}
	names := make([]string, 0, len(p.modules))
	for n, m := range p.modules {
		if m.removed == "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return "", fmt.Errorf("%w %q: the modules that exist are %s, and files imported as ./path.js or ./path.ts",
		errUnknownModule, spec, strings.Join(names, ", "))
}

// remoteKey is the file of the module directory that holds the remote
// module url, which must exist: llmchaos fetches nothing.
func (p *Program) remoteKey(spec string) (string, error) {
	u, err := url.Parse(spec)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w %q: not a URL", errUnknownModule, spec)
	}
	rel := filepath.Join(u.Host, filepath.FromSlash(path.Clean("/"+u.Path)))
	if p.moduleDir == "" {
		return "", fmt.Errorf("%w %q: remote modules are not fetched (llmchaos runs offline): save it as DIR/%s and give DIR with --module-dir or %s (or save it next to the script and import it as ./%s)",
			errUnknownModule, spec, filepath.ToSlash(rel), EnvModuleDir, path.Base(u.Path))
	}
	file := filepath.Join(p.moduleDir, rel)
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("%w %q: remote modules are not fetched (llmchaos runs offline) and the module directory lacks it: save it as %s",
			errUnknownModule, spec, file)
	}
	return file, nil
}

// errUnknownModule is an import of a name that is not a built-in module.
var errUnknownModule = errors.New("unknown module")

// removedModuleError is an import of a module k6 removed: k6's message.
type removedModuleError string

func (e removedModuleError) Error() string { return string(e) }

// isRemovedModule says whether err is a removedModuleError.
func isRemovedModule(err error) bool {
	_, ok := errors.AsType[removedModuleError](err)
	return ok
}

// parse makes the module record of key. A TypeScript file is transpiled
// first (see transpileTS); an import of ./name.js that does not exist
// falls back to ./name.ts, as TypeScript's own module resolution does.
func (p *Program) parse(key string) (sobek.ModuleRecord, error) {
	if mod, ok := p.modules[key]; ok {
		return sobek.ParseModule(key, builtinSource(mod), p.resolve)
	}
	path := key
	src, err := readModule(path)
	if errors.Is(err, os.ErrNotExist) && strings.EqualFold(filepath.Ext(path), ".js") {
		ts := strings.TrimSuffix(path, filepath.Ext(path)) + ".ts"
		if b, tsErr := readModule(ts); tsErr == nil {
			path, src, err = ts, b, nil
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("module %s %w", key, errModuleNotFound)
		}
		if _, ok := errors.AsType[*os.PathError](err); ok {
			return nil, fmt.Errorf("read module: %w", err) // names the file
		}
		return nil, fmt.Errorf("read module %s: %w", path, err)
	}
	text := string(src)
	if isTypeScript(path) {
		if text, err = transpileTS(path, text); err != nil {
			return nil, err
		}
	}
	body, err := sobek.Parse(path, text, parser.IsModule, parser.WithSourceMapLoader(loadSourceMap))
	if err != nil {
		return nil, err
	}
	m, err := sobek.ModuleFromAST(body, p.resolve)
	if err != nil {
		return nil, err
	}
	p.asts[m] = body
	return m, nil
}

// loadSourceMap reads the source map a module's sourceMappingURL names;
// a map that is not there is no error (the positions are then the
// generated file's), as a bundle shipped without its maps still runs.
func loadSourceMap(path string) ([]byte, error) {
	path = strings.TrimPrefix(path, "file://")
	b, err := readRegular(path, MaxModuleSize, "a source map is read from a file", func(n int64) error {
		return fmt.Errorf("%d bytes is over the limit of %d bytes (64 MiB)", n, MaxModuleSize)
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if _, ok := errors.AsType[*os.PathError](err); err != nil && !ok {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return b, err
}

// MaxModuleSize bounds a script, a module it imports and a source map:
// parsed, a source takes many times its size in memory, and a bundle of
// every dependency is a few MiB.
const MaxModuleSize = 64 << 20

// readModule reads the source of a script or module file, refusing a
// device, a pipe or a directory (reading /dev/zero would never end) and a
// file over MaxModuleSize before reading it.
func readModule(path string) ([]byte, error) {
	return readRegular(path, MaxModuleSize, "a module is read from a file", func(n int64) error {
		return fmt.Errorf("%d bytes is over the limit of %d bytes (64 MiB) for one module", n, MaxModuleSize)
	})
}

// builtinSource is the ES module text of a built-in module: it takes the
// VU's Go object of that module and exports its members by name.
func builtinSource(m module) string {
	var b strings.Builder
	fmt.Fprintf(&b, "const m = globalThis.%s(%q);\nexport default m;\n", requireGlobal, m.name)
	for _, e := range m.exports {
		fmt.Fprintf(&b, "export const %s = m.%s;\n", e, e)
	}
	return b.String()
}
