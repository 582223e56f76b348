// Command jsonrelay starts the command given as its arguments and relays
// JSON-RPC between them as the least a process that reads the messages
// can: each line from its stdin is scanned once (internal/jsonrpc, the
// gateway's own scanner, validating), a request goes to the command under
// an id of jsonrelay's own, and the answer with that id goes back under
// the client's id. Every other line passes as it came. It is the benchmark
// suite's jsonrelay row: next to relay, which copies bytes, it is the floor
// of a gateway that parses and routes, with nothing of what `harness
// serve` does besides (a registry, tool names, timeouts, cancellation,
// sessions, an answer written as mcp-go writes it).
package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/harness-go/harness/bench/internal/middle"
	"github.com/harness-go/harness/internal/jsonrpc"
)

func main() {
	cmd, in, out := middle.Start("jsonrelay")
	ids := &ids{client: map[int64][]byte{}}
	go func() {
		relay(os.Stdin, in, ids.request)
		in.Close() // the client's EOF reaches the server
	}()
	relay(out, os.Stdout, ids.answer)
	_ = cmd.Wait()
}

// ids maps jsonrelay's ids to the client's.
type ids struct {
	mu     sync.Mutex
	next   int64
	client map[int64][]byte
}

// request gives a request an id of ours and appends it to dst; ok is
// false for any other message.
func (m *ids) request(dst []byte, msg jsonrpc.Message) (_ []byte, ok bool) {
	if len(msg.ID) == 0 || len(msg.Method) == 0 {
		return dst, false
	}
	m.mu.Lock()
	m.next++
	id := m.next
	m.client[id] = append([]byte(nil), msg.ID...)
	m.mu.Unlock()
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = append(dst, msg.Method...)
	if msg.Params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, msg.Params...)
	}
	return append(dst, "}\n"...), true
}

// answer gives the answer to one of our requests the client's id back and
// appends it to dst; ok is false for any other message.
func (m *ids) answer(dst []byte, msg jsonrpc.Message) (_ []byte, ok bool) {
	if len(msg.Method) > 0 || len(msg.ID) == 0 {
		return dst, false
	}
	id, err := strconv.ParseInt(string(msg.ID), 10, 64)
	if err != nil {
		return dst, false
	}
	m.mu.Lock()
	client, found := m.client[id]
	delete(m.client, id)
	m.mu.Unlock()
	if !found {
		return dst, false
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, client...)
	if msg.Error != nil {
		dst = append(dst, `,"error":`...)
		dst = append(dst, msg.Error...)
	} else {
		dst = append(dst, `,"result":`...)
		dst = append(dst, msg.Result...)
	}
	return append(dst, "}\n"...), true
}

// relay reads lines from r and writes each to w, as rewrite makes it or,
// when rewrite does not take it, as it came, until r ends or a write fails.
func relay(r io.Reader, w io.Writer, rewrite func([]byte, jsonrpc.Message) ([]byte, bool)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long, buf []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if len(line) > 0 {
			msg := line
			if m, ok := jsonrpc.ScanValid(line); ok {
				if b, ok := rewrite(buf[:0], m); ok {
					buf, msg = b, b
				}
			}
			if _, werr := w.Write(msg); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
