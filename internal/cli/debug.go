package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/spf13/cobra"
)

// NewCmdDebug builds `diffpal debug`.
func NewCmdDebug(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Look inside a review without running it",
		Args:  cobra.NoArgs,
	}
	var prompt *cobra.Command
	prompt = NewCmdReview(ios, func(o *ReviewOptions) error {
		o.record = &promptRecorder{}
		ctx := prompt.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return reviewRun(ctx, o)
	})
	prompt.Use = "prompt [review flags] [-- PATH...]"
	prompt.Short = "Print the exact prompts a review would send, calling nothing"
	prompt.Long = `Run the review as diffpal review would — the same range, policy,
provider, profiles, instructions, language and evidence budget — but with
every model and agent transport replaced by a recorder that answers
"nothing found" without contacting anything. Each request the review would
send is printed: its provider, schema, model, the budget of the evidence
it carries, then the system text and the messages, as the provider would
receive them (redacted, fenced). No key is needed, nothing is cached, and
no output is written.

The built-in provider sends no prompt; use --provider (or the config's
provider) to see a model's or agent's.`
	prompt.Example = `  diffpal debug prompt --provider openai --model gpt-5
  diffpal debug prompt --provider claude_code_acp --profile security_reviewer -- internal/`
	cmd.AddCommand(prompt)
	return cmd
}

// promptRecorder stands in for every model transport and keeps each
// request in the order the review sent it.
type promptRecorder struct {
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	provider string
	pc       config.Provider
	req      llm.Request
}

// transport is the providerset hook; nil when r is nil.
func (r *promptRecorder) transport() func(string, config.Provider) llm.Client {
	if r == nil {
		return nil
	}
	return func(name string, pc config.Provider) llm.Client { return &recordingClient{r: r, name: name, pc: pc} }
}

type recordingClient struct {
	r    *promptRecorder
	name string
	pc   config.Provider
}

func (c *recordingClient) Name() string { return c.name }

// Complete records the request and answers with an empty valid answer of
// the requested schema, so the review goes on to every later call.
func (c *recordingClient) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	c.r.mu.Lock()
	c.r.calls = append(c.r.calls, recordedCall{provider: c.name, pc: c.pc, req: req})
	c.r.mu.Unlock()
	answer := `{"candidates":[],"coverage_gaps":[],"unverified":[]}`
	if req.SchemaName == llm.VerifySchemaName {
		answer = `{"verdicts":[]}`
	}
	return llm.Response{JSON: json.RawMessage(answer), Model: req.Model}, nil
}

// print writes every recorded request. The prompts were built redacted;
// the secret detector runs once more as the last step before stdout.
func (r *promptRecorder) print(w io.Writer, res *review.Result) error {
	var b strings.Builder
	if len(r.calls) == 0 {
		fmt.Fprintf(&b, "diffpal debug prompt: provider %s sends no prompt (the built-in rules need none); choose a model or agent with --provider\n", res.Audit.Provider)
	}
	for i, c := range r.calls {
		size := len(c.req.System)
		for _, m := range c.req.Messages {
			size += len(m.Content)
		}
		budget := "default"
		if c.pc.MaxBytes > 0 {
			budget = fmt.Sprintf("%d bytes", c.pc.MaxBytes)
		}
		fmt.Fprintf(&b, "=== request %d of %d: provider %s (%s), schema %s, model %q, %d bytes (evidence budget %s)\n",
			i+1, len(r.calls), c.provider, c.pc.Type, c.req.SchemaName, c.req.Model, size, budget)
		fmt.Fprintf(&b, "--- system\n%s\n", strings.TrimRight(c.req.System, "\n"))
		for _, m := range c.req.Messages {
			fmt.Fprintf(&b, "--- %s\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
		}
	}
	_, err := io.WriteString(w, secrets.Redact(b.String()))
	return err
}
