package console

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var funcs = template.FuncMap{
	"ids": func(ids []int32) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(int(id))
		}
		return strings.Join(s, ",")
	},
	"bytes":     func(v int64) string { return humanBytes(float64(v)) },
	"rateBytes": rateBytes,
	"rateCount": rateCount,
	"count":     humanCount,
	"ms":        func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" },
	"clock":     func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"topicURL": func(name string) template.URL { return template.URL("/topic?name=" + url.QueryEscape(name)) },
	"groupURL": func(id string) template.URL { return template.URL("/group?id=" + url.QueryEscape(id)) },
	"str": func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	},
}
