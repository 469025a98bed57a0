package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Collector exports the server's counters to Prometheus at scrape time.
func (s *Server) Collector() prometheus.Collector { return serverCollector{s} }

type serverCollector struct{ s *Server }

var (
	descRequests  = prometheus.NewDesc("weir_server_requests_total", "Requests dispatched, by API.", []string{"api"}, nil)
	descBytesIn   = prometheus.NewDesc("weir_server_bytes_in_total", "Bytes read from clients.", nil, nil)
	descBytesOut  = prometheus.NewDesc("weir_server_bytes_out_total", "Bytes written to clients.", nil, nil)
	descConnsOpen = prometheus.NewDesc("weir_server_connections_opened_total", "Connections accepted.", nil, nil)
	descConnsShut = prometheus.NewDesc("weir_server_connections_closed_total", "Connections closed.", nil, nil)
	descProtoErrs = prometheus.NewDesc("weir_server_protocol_errors_total", "Connections closed for bad input.", nil, nil)
	descInline    = prometheus.NewDesc("weir_server_inline_replies_total", "Replies written by a connection's reader because nothing was queued before them.", nil, nil)
	descIdleShut  = prometheus.NewDesc("weir_server_idle_connections_closed_total", "Connections closed for sending no request for connections.max.idle.ms.", nil, nil)
	descAuthFails = prometheus.NewDesc("weir_server_authentication_failures_total", "Connections closed by their listener's security: failed TLS handshakes and authentications, requests before authentication, expired sessions.", nil, nil)
)

func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descBytesIn, descBytesOut, descConnsOpen, descConnsShut, descProtoErrs, descInline, descAuthFails, descIdleShut} {
		ch <- d
	}
}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	for key, n := range st.Requests {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), kmsg.NameForKey(key))
	}
	for d, v := range map[*prometheus.Desc]uint64{descBytesIn: st.BytesIn, descBytesOut: st.BytesOut, descConnsOpen: st.ConnectionsOpened,
		descConnsShut: st.ConnectionsClosed, descProtoErrs: st.ProtocolErrors, descInline: st.InlineReplies, descAuthFails: st.AuthFailures, descIdleShut: st.IdleClosed} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
}
