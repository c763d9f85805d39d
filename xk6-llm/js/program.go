package js

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/grafana/sobek"
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

	mu     sync.Mutex
	cache  map[string]sobek.ModuleRecord // by absolute path or built-in name
	errs   map[string]error
	pathOf map[sobek.ModuleRecord]string
}

// Load reads, parses and links the script at path and the modules it
// imports. A syntax error, a missing file or an unknown import is a
// *ScriptError that says where.
func Load(path string) (*Program, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	p := &Program{
		Path: abs, Dir: filepath.Dir(abs), modules: moduleTable(),
		cache: map[string]sobek.ModuleRecord{}, errs: map[string]error{}, pathOf: map[sobek.ModuleRecord]string{},
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
// other is a name in the table of built-in modules.
func (p *Program) resolve(referrer any, spec string) (sobek.ModuleRecord, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key, err := p.key(referrer, spec)
	if err != nil {
		return nil, err
	}
	if m, ok := p.cache[key]; ok {
		return m, nil
	}
	if err, ok := p.errs[key]; ok {
		return nil, err
	}
	m, err := p.parse(key)
	if err != nil {
		p.errs[key] = err
		return nil, err
	}
	p.cache[key] = m
	p.pathOf[m] = key
	return m, nil
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
	if _, ok := p.modules[spec]; ok {
		return spec, nil
	}
	names := make([]string, 0, len(p.modules))
	for n := range p.modules {
		names = append(names, n)
	}
	sort.Strings(names)
	return "", fmt.Errorf("unknown module %q: the modules that exist are %s, and files imported as ./path.js",
		spec, strings.Join(names, ", "))
}

// parse makes the module record of key.
func (p *Program) parse(key string) (sobek.ModuleRecord, error) {
	if mod, ok := p.modules[key]; ok {
		return sobek.ParseModule(key, builtinSource(mod), p.resolve)
	}
	src, err := os.ReadFile(key)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("module %s not found", key)
		}
		return nil, fmt.Errorf("read module: %w", err)
	}
	return sobek.ParseModule(key, string(src), p.resolve)
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
