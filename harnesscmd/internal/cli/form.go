package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/harness-go/harness/internal/form"
	"github.com/harness-go/harness/internal/safe"
)

// An MCP server's elicitation asks a person to fill a form (package
// internal/form reads it and checks the answers, with the rules the web
// page uses too). docs/rfc/0006-console.md, "Questions", shows the dialog;
// this file holds what it decides, apart from the terminal, so that a test
// drives it with scripted answers.

// A person's answer to an elicitation: accept with content, decline, or
// cancel.
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// errCancelled is a question the person cancelled (Ctrl-C, Ctrl-D).
var errCancelled = errors.New("cancelled")

// dialog is how a form talks to the person: it says lines and reads
// answers. line returns errCancelled when the person cancels.
type dialog interface {
	say(text string)
	line(ctx context.Context, prompt string) (string, error)
}

// fillForm asks every field of the form and then whether to send; it
// returns the elicitation result. Typing /decline or /cancel at any field
// answers so; an answer that does not fit its field is asked again, with
// what is wanted.
func fillForm(ctx context.Context, d dialog, fields []form.Field) (map[string]any, error) {
	content := map[string]any{}
	d.say("  (Enter keeps the default; /decline or /cancel at any field; Ctrl-C cancels)")
	for _, f := range fields {
		if f.Description != "" && f.Description != f.Title {
			d.say("  " + safe.Line(f.Description))
		}
		for {
			text, err := d.line(ctx, "  "+f.Label())
			if err != nil {
				return nil, err
			}
			switch strings.TrimSpace(text) {
			case "/decline":
				return map[string]any{"action": actionDecline}, nil
			case "/cancel":
				return map[string]any{"action": actionCancel}, nil
			}
			v, err := f.Answer(text)
			if errors.Is(err, form.ErrSkip) {
				break
			}
			if err != nil {
				d.say("    " + safe.Line(err.Error()))
				continue
			}
			content[f.Name] = v
			break
		}
	}
	for {
		text, err := d.line(ctx, "  send? [Y]es, [d]ecline, [c]ancel: ")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "", "y", "yes":
			return map[string]any{"action": actionAccept, "content": content}, nil
		case "d", "decline", "n", "no":
			return map[string]any{"action": actionDecline}, nil
		case "c", "cancel":
			return map[string]any{"action": actionCancel}, nil
		}
		d.say("    answer y, d or c")
	}
}
