package console

import "net/http"

// moreRoutes registers the search, history and actions pages under the
// prefix p.
func (h *handler) moreRoutes(mux *http.ServeMux, p string) {
	mux.HandleFunc("GET "+p+"/queues/{queue}/dlq/search", h.search)
	mux.HandleFunc("GET "+p+"/queues/{queue}/history", h.historyPage)
	mux.HandleFunc("GET "+p+"/actions", h.actionsPage)
	if h.opts.SNS != nil {
		h.subscriptionRoutes(mux, p)
	}
}
