package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// MaxConcurrent bounds the machines one fan-out works on at a time.
const MaxConcurrent = 10

// FanOut runs fn for 0..n-1, at most MaxConcurrent at a time, and returns
// each one's error.
func FanOut(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, MaxConcurrent)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				errs[i] = fn(ctx, i)
			case <-ctx.Done():
				errs[i] = ctx.Err()
			}
		})
	}
	wg.Wait()
	return errs
}

// Refusals collects changes a provider cannot make to existing machines,
// grouped by key and values with the machines in order, into one error:
// "<key> changed from <a> to <b> for existing <what> h1, h2; <why>: revert
// <key> or recreate those machines".
type Refusals struct {
	// What names the machines ("server(s)", "VM(s)").
	What string
	list []*refusal
}

type refusal struct {
	key, from, to, why string
	hosts              []string
}

// Add records that key changed from from to to on host, and why that is
// refused.
func (r *Refusals) Add(key, from, to, host, why string) {
	for _, x := range r.list {
		if x.key == key && x.from == from && x.to == to {
			x.hosts = append(x.hosts, host)
			return
		}
	}
	r.list = append(r.list, &refusal{key: key, from: from, to: to, why: why, hosts: []string{host}})
}

// Err is every refusal joined, or nil.
func (r *Refusals) Err() error {
	errs := make([]error, len(r.list))
	for i, x := range r.list {
		errs[i] = fmt.Errorf("%s changed from %s to %s for existing %s %s; %s: revert %s or recreate those machines",
			x.key, x.from, x.to, r.What, strings.Join(x.hosts, ", "), x.why, x.key)
	}
	return errors.Join(errs...)
}
