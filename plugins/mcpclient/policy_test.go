package mcpclient

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The reconnect policy, case by case; each wait is then waited through the
// supervisor's waitForAttempt, on a fake clock.
func TestNextAttempt(t *testing.T) {
	t.Parallel()
	on := Reconnect{Enabled: true, InitialDelayMs: 500, MaxDelayMs: 30000, MaxAttempts: 10}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name string
		r    Reconnect
		made int
		up   time.Duration
		want attempt
	}{
		{"the first attempt", on, 0, time.Second, attempt{n: 1, wait: ms(500)}},
		{"doubling", on, 1, 0, attempt{n: 2, wait: ms(1000)}},
		{"the fourth", on, 3, 0, attempt{n: 4, wait: ms(4000)}},
		{"capped at maxDelayMs", on, 7, 0, attempt{n: 8, wait: ms(30000)}},
		{"the last one", on, 9, 0, attempt{n: 10, wait: ms(30000)}},
		{"past maxAttempts", on, 10, 0, attempt{n: 11, giveUp: true}},
		{"a connection that stayed up starts the count again", on, 10, ms(30000), attempt{n: 1, wait: ms(500)}},
		{"one that did not, does not", on, 10, ms(29999), attempt{n: 11, giveUp: true}},
		{"reconnecting off", Reconnect{MaxAttempts: 10}, 0, time.Hour, attempt{giveUp: true}},
		{"a ceiling under the doubling", Reconnect{Enabled: true, InitialDelayMs: 100, MaxDelayMs: 250, MaxAttempts: 5}, 2, 0, attempt{n: 3, wait: ms(250)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := nextAttempt(tc.r, tc.made, tc.up)
			if got != tc.want {
				t.Fatalf("nextAttempt(%+v, %d, %s) = %+v, want %+v", tc.r, tc.made, tc.up, got, tc.want)
			}
			synctest.Test(t, func(t *testing.T) {
				s := &supervisor{}
				start := time.Now()
				if !s.waitForAttempt(context.Background(), got.wait) {
					t.Fatal("waitForAttempt gave up")
				}
				if d := time.Since(start); d != got.wait {
					t.Fatalf("paused %s, want %s", d, got.wait)
				}
			})
		})
	}
}

// A successor starting beside the instance holds its attempts until it
// goes; the instance's end ends the wait.
func TestWaitForAttemptHolds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &supervisor{}
		s.holdAttempts(true)
		done := make(chan bool)
		start := time.Now()
		go func() { done <- s.waitForAttempt(context.Background(), time.Second) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the attempt went on while held")
		default:
		}
		s.holdAttempts(false)
		if !<-done || time.Since(start) != time.Minute {
			t.Fatalf("resumed after %s", time.Since(start))
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.holdAttempts(true)
		go func() { done <- s.waitForAttempt(ctx, time.Second) }()
		time.Sleep(2 * time.Second)
		cancel()
		if <-done {
			t.Fatal("waitForAttempt went on after the instance stopped")
		}
	})
}
