package js

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// typeScriptExts are the file extensions of TypeScript modules, which are
// transpiled to JavaScript before sobek parses them.
var typeScriptExts = []string{".ts", ".mts"}

// ScriptExtensions are the file extensions of the scripts `llmchaos run`
// runs: JavaScript modules and TypeScript.
func ScriptExtensions() []string { return append([]string{".js", ".mjs"}, typeScriptExts...) }

// IsScript reports whether path names a script by its extension (see
// ScriptExtensions), in any case.
func IsScript(path string) bool {
	ext := filepath.Ext(path)
	for _, e := range ScriptExtensions() {
		if strings.EqualFold(ext, e) {
			return true
		}
	}
	return false
}

// isTypeScript reports whether path names a TypeScript module.
func isTypeScript(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range typeScriptExts {
		if ext == e {
			return true
		}
	}
	return false
}

// unsupportedFeatures are the ES features sobek lacks that esbuild can
// lower: with them off, esbuild rewrites async generators and for-await
// loops into code sobek runs. (Regular expression flags d and v and named
// capture groups cannot be lowered; such a literal fails when it runs.)
var unsupportedFeatures = map[string]bool{
	"async-generator": false,
	"for-await":       false,
}

// transpileTS turns a TypeScript module into an ES module for sobek, as
// k6 v1 does: types are stripped and not checked, and an inline source map
// (which sobek reads from the last line; see oneBasedSourceMap) keeps the
// positions of errors and stack traces in the .ts file. A syntax error is a *ScriptError at the
// position esbuild gives.
func transpileTS(path, src string) (string, error) {
	res := api.Transform(src, api.TransformOptions{
		Loader:         api.LoaderTS,
		Format:         api.FormatESModule,
		Target:         api.ES2022,
		Supported:      unsupportedFeatures,
		Platform:       api.PlatformNeutral,
		Sourcefile:     path,
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Charset:        api.CharsetUTF8,
		LegalComments:  api.LegalCommentsNone,
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return "", esbuildError(path, res.Errors)
	}
	sm, err := oneBasedSourceMap(res.Map)
	if err != nil {
		return "", fmt.Errorf("transpile %s: %w", path, err)
	}
	return strings.TrimRight(string(res.Code), "\n") + "\n" + inlineSourceMap(sm) + "\n", nil
}

// esbuildError describes esbuild's first error, with the count of the
// others.
func esbuildError(path string, msgs []api.Message) *ScriptError {
	m := msgs[0]
	se := &ScriptError{Pos: path, Msg: "transpile TypeScript: SyntaxError: " + m.Text}
	if l := m.Location; l != nil {
		file := cmpOr(l.File, path)
		// esbuild's lines count from 1 and its columns, in bytes, from 0.
		se.Pos = fmt.Sprintf("%s:%d:%d", file, l.Line, l.Column+1)
		if l.LineText != "" {
			se.Stack = "\t" + l.LineText + "\n\t" + caretPad(l.LineText, l.Column) + "^"
		}
	}
	if n := len(msgs) - 1; n > 0 {
		se.Msg += fmt.Sprintf(" (and %d more error(s))", n)
	}
	return se
}

// caretPad is the blank prefix that puts a caret under byte col of line:
// tabs kept, one space per other character.
func caretPad(line string, col int) string {
	var b strings.Builder
	for _, r := range line[:min(col, len(line))] {
		if r == '\t' {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}
