package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/spf13/cobra"
)

// ValidateOptions are the inputs of `diffpal validate`.
type ValidateOptions struct {
	IO *IOStreams
	// Dir is -C; Files are resolved from it.
	Dir   string
	Files []string
	JSON  bool
	Quiet bool
	// Strict makes warnings errors.
	Strict bool
}

// FileReport is one file's validation result in --json output.
type FileReport struct {
	File             string             `json:"file"`
	Valid            bool               `json:"valid"`
	Version          string             `json:"version,omitempty"`
	EffectiveVersion string             `json:"effective_version,omitempty"`
	Findings         int                `json:"findings"`
	Problems         []findings.Problem `json:"problems"`
	// Warnings are values read only after normalizing them (a severity
	// that is not lower-case). With --strict they are problems instead.
	Warnings []findings.Problem `json:"warnings"`
	Error    string             `json:"error,omitempty"`
}

// ValidateReport is the --json output.
type ValidateReport struct {
	Valid bool         `json:"valid"`
	Files []FileReport `json:"files"`
}

// NewCmdValidate builds `diffpal validate`.
func NewCmdValidate(ios *IOStreams, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Check findings bundles against their version's schema and rules",
		Long: `Validate findings bundles (v1, v2, v3; v4 tolerated). Every problem is
reported, one line each, as FILE: /json/pointer: reason. A missing
version reads as v1; unknown fields are ignored.

A severity that is not lower-case ("HIGH", "Medium", also in
gate.block_on) is readable: DiffPal's reader and diffpal's read it as the
lower-case value. It is reported as a warning, FILE: warning: /json/pointer:
reason, and the file is still valid; --strict makes warnings errors, and
` + "`diffpal upgrade`" + ` rewrites the values.

Without FILE it validates .artifacts/diffpal/findings.json; "-" reads
standard input. Exit 0 when every file is valid, 2 otherwise.

` + dirHelp,
		Example: `  diffpal validate
  diffpal validate old.json new.json
  diffpal validate --strict -C repo
  diffpal validate --json findings.json | jq '.files[].problems'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDir(opts.Dir); err != nil {
				return err
			}
			opts.Files = nil
			for _, a := range args {
				opts.Files = append(opts.Files, inDir(opts.Dir, a))
			}
			if len(opts.Files) == 0 {
				opts.Files = []string{filepath.Join(artifactsRoot(cmd.Context(), opts.Dir), findings.DefaultPath)}
			}
			if runF != nil {
				return runF(opts)
			}
			return validateRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a machine-readable report on stdout")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing for valid files but their warnings")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "treat warnings (values read only after normalizing them) as errors")
	addDirFlag(cmd, &opts.Dir)
	return cmd
}

func validateRun(opts *ValidateOptions) error {
	report := ValidateReport{Valid: true}
	for _, path := range opts.Files {
		r := validateFile(opts.IO, path, opts.Strict)
		if !r.Valid {
			report.Valid = false
		}
		report.Files = append(report.Files, r)
		if opts.JSON {
			continue
		}
		name := displayName(path)
		switch {
		case r.Error != "":
			fmt.Fprintf(opts.IO.Out, "%s: %s\n", name, r.Error)
		case r.Valid:
			printWarnings(opts.IO.Out, name, r.Warnings)
			if !opts.Quiet {
				fmt.Fprintf(opts.IO.Out, "%s: valid %s bundle, %d findings%s\n", name, r.EffectiveVersion, r.Findings, warningCount(len(r.Warnings)))
			}
		default:
			for _, p := range r.Problems {
				fmt.Fprintf(opts.IO.Out, "%s: %s\n", name, p)
			}
			printWarnings(opts.IO.Out, name, r.Warnings)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(report); err != nil {
			return ioErr(err)
		}
	}
	if !report.Valid {
		return silent(ExitUsage)
	}
	return nil
}

func validateFile(ios *IOStreams, path string, strict bool) FileReport {
	r := FileReport{File: path, Problems: []findings.Problem{}, Warnings: []findings.Problem{}}
	// Validation keeps no findings and reads the bundle through a window
	// (findings.DecodeReader): memory stays flat for huge bundles.
	var info findings.ReadInfo
	var problems findings.Problems
	err := decodeBundleStream(ios, path, func(rd io.Reader, limit int64) error {
		var err error
		_, info, problems, err = findings.DecodeReader(rd, limit, findings.DecodeOptions{OnFinding: func(*findings.Finding, bool) {}})
		return err
	})
	var re *bundleReadError
	if errors.As(err, &re) {
		r.Error = errorText(re.err, path)
		return r
	}
	r.Version, r.EffectiveVersion, r.Findings = info.Version, info.Effective, info.Findings
	if err != nil {
		var se *findings.SyntaxError
		if errors.As(err, &se) && se.Pointer != "" {
			r.Problems = append(r.Problems, findings.Problem{Pointer: se.Pointer, Reason: err.Error()})
		}
		r.Error = err.Error()
		return r
	}
	r.Problems = append(r.Problems, problems...)
	if strict {
		r.Problems = append(r.Problems, info.Warnings...)
	} else {
		r.Warnings = append(r.Warnings, info.Warnings...)
	}
	r.Valid = len(r.Problems) == 0
	return r
}

// warningCount is ", N warning(s)" for the "valid" line, "" for none.
func warningCount(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 warning"
	}
	return fmt.Sprintf(", %d warnings", n)
}

// errorText strips a leading "path: " that the error may already carry.
func errorText(err error, path string) string {
	s := err.Error()
	if p := path + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
