package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// callResult is the part of a tools/call result we read. Content blocks stay
// raw: a block of a type we do not know must not spoil the others.
type callResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
	IsError           bool              `json:"isError"`
}

// block is the part of a content block we read.
type block struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType"`
}

// mapped is a tools/call result as the model will see it.
type mapped struct {
	Text    string
	IsError bool
	// Discarded lists the placeholders written for binary content, for the
	// log.
	Discarded []string
}

// mapResult turns the raw result of tools/call into one text (see the seeds'
// result mapping): text blocks joined by "\n"; image, audio and resource
// blocks replaced by short placeholders; a result with no content but
// structuredContent rendered as its compact JSON; nothing at all said so.
func mapResult(raw json.RawMessage, rawName string) (mapped, error) {
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return mapped{}, fmt.Errorf("the server's result is not a tools/call result: %w", err)
	}
	out := mapped{IsError: r.IsError}
	parts := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		var b block
		if err := json.Unmarshal(c, &b); err != nil {
			parts = append(parts, "[unsupported content: not an object]")
			continue
		}
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image", "audio":
			mime := b.MimeType
			if mime == "" {
				mime = "unknown" // the server left it out
			}
			p := fmt.Sprintf("[%s: %s, content discarded]", b.Type, mime)
			parts = append(parts, p)
			out.Discarded = append(out.Discarded, p)
		case "resource", "resource_link":
			p := "[resource: content discarded]"
			parts = append(parts, p)
			out.Discarded = append(out.Discarded, p)
		default:
			parts = append(parts, fmt.Sprintf("[unsupported content type: %s]", b.Type))
		}
	}
	switch {
	case len(parts) > 0:
		out.Text = strings.Join(parts, "\n")
	case len(r.StructuredContent) > 0 && !bytes.Equal(r.StructuredContent, []byte("null")):
		var b bytes.Buffer
		// Unmarshal above checked the whole result: Compact cannot fail.
		_ = json.Compact(&b, r.StructuredContent)
		out.Text = b.String()
	default:
		out.Text = fmt.Sprintf("(%s returned no text content)", rawName)
	}
	return out, nil
}

// textResult is a tools/call result with its content blocks decoded in one
// pass.
type textResult struct {
	Content []block `json:"content"`
	IsError bool    `json:"isError"`
}

// mapTextResult is [mapResult] with a fast path for the usual result, text
// blocks only: one decoding pass instead of one per block, the same text.
// Every other result goes to mapResult.
func mapTextResult(raw json.RawMessage, rawName string) (mapped, error) {
	var r textResult
	if json.Unmarshal(raw, &r) != nil || len(r.Content) == 0 {
		return mapResult(raw, rawName)
	}
	parts := make([]string, len(r.Content))
	for i, b := range r.Content {
		if b.Type != "text" {
			return mapResult(raw, rawName)
		}
		parts[i] = b.Text
	}
	return mapped{Text: strings.Join(parts, "\n"), IsError: r.IsError}, nil
}
