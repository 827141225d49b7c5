package sqsotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/unique"
)

// The unique keys' instruments (package unique), read from unique.Stats;
// doc.go lists them.
const (
	metricUniqueSends         = "sqsworker.unique.sends"
	metricUniqueHeld          = "sqsworker.unique.keys.held"
	metricUniqueReleased      = "sqsworker.unique.released"
	metricUniqueRecovered     = "sqsworker.unique.recovered"
	metricUniqueReleaseErrors = "sqsworker.unique.release_errors"
	metricUniqueRequests      = "sqsworker.unique.requests"
)

// uniqueInstruments are the asynchronous instruments of ObserveUnique.
type uniqueInstruments struct {
	sends, released, recovered, releaseErrors, requests metric.Int64ObservableCounter
	held                                                metric.Int64ObservableUpDownCounter
}

func (m *uniqueInstruments) init(meter metric.Meter) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.sends, err = meter.Int64ObservableCounter(metricUniqueSends, metric.WithUnit("{send}"),
		metric.WithDescription("Sends through unique.Store.Send, by sqsworker.result: claimed (the key taken, the job sent), refused (a duplicate: ErrDuplicate, nothing sent), debounced (folded into the waiting job), failed_open (sent without the key, Options.FailOpen), send_error (the claim freed again because the send failed)."))
	add(err)
	m.held, err = meter.Int64ObservableUpDownCounter(metricUniqueHeld, metric.WithUnit("{key}"),
		metric.WithDescription("Keys this process claimed minus the keys it freed (released by a settlement or Release, taken over after their expiry, freed after a failed send). Summed over every process that sends or runs the jobs of a table, the keys held; a key for a period counts until it is claimed again. unique.Store.Held counts them exactly, with a Scan."))
	add(err)
	m.released, err = meter.Int64ObservableCounter(metricUniqueReleased, metric.WithUnit("{key}"),
		metric.WithDescription("Keys freed by a settled job (deleted or dead-lettered) or by Store.Release (unique.Stats.Released)."))
	add(err)
	m.recovered, err = meter.Int64ObservableCounter(metricUniqueRecovered, metric.WithUnit("{key}"),
		metric.WithDescription("Claims that took over a key whose expiry had passed: its job was lost, or its release failed or never came (unique.Stats.Recovered)."))
	add(err)
	m.releaseErrors, err = meter.Int64ObservableCounter(metricUniqueReleaseErrors, metric.WithUnit("{key}"),
		metric.WithDescription("Releases and expiry refreshes that failed: each such key is held until its expiry (unique.Stats.ReleaseErrors)."))
	add(err)
	m.requests, err = meter.Int64ObservableCounter(metricUniqueRequests, metric.WithUnit("{request}"),
		metric.WithDescription("DynamoDB calls the Store made, by sqsworker.result: ok, error (a failed condition, a refused duplicate, is ok)."))
	add(err)
	return errors.Join(errs...)
}

// ObserveUnique reports a unique.Store's counters (unique.Stats; a
// *unique.Store satisfies s) through asynchronous instruments, read when
// the meter collects: sends by result (claimed, refused as duplicates,
// debounced, failed open, send errors), the keys this process holds on
// balance, releases, recoveries, release errors and DynamoDB requests by
// result. Call Unregister on the result when the Store is gone.
func (in *Instrumentation) ObserveUnique(s interface{ Stats() unique.Stats }) (metric.Registration, error) {
	m := &in.m.unique
	base := in.attrs.get("").observe
	return in.m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := s.Stats()
		for result, n := range map[string]int64{"claimed": st.Claimed, "refused": st.Refused, "debounced": st.Debounced, "failed_open": st.FailedOpen, "send_error": st.SendErrors} {
			o.ObserveInt64(m.sends, n, in.attrs.get("", attrResult.String(result)).observe...)
		}
		o.ObserveInt64(m.held, st.Claimed-st.Released-st.Recovered-st.SendErrors, base...)
		o.ObserveInt64(m.released, st.Released, base...)
		o.ObserveInt64(m.recovered, st.Recovered, base...)
		o.ObserveInt64(m.releaseErrors, st.ReleaseErrors, base...)
		o.ObserveInt64(m.requests, st.Requests-st.RequestErrors, in.attrs.get("", attrResult.String("ok")).observe...)
		o.ObserveInt64(m.requests, st.RequestErrors, in.attrs.get("", attrResult.String("error")).observe...)
		return nil
	}, m.sends, m.held, m.released, m.recovered, m.releaseErrors, m.requests)
}
