// Command peer-go-http: an HTTP/1.1 server on net/http, for weft-bench's
// http workload (the Go side of examples/http_server.c).
//
//	peer-go-http PORT [THREADS]
//
// Listens on 127.0.0.1:PORT (0: a free port), prints "listening on PORT"
// (the port it got) on stdout, and answers as the weft server does:
// GET (or HEAD) /plaintext -> text/plain "Hello, World!", /json ->
// {"message":"Hello, World!"}; another method on those paths: 405 with
// Allow; any other path: 404.  net/http writes Date on every response;
// Content-Length is set by the handlers (net/http would also compute it
// for a body this small).  Keep-alive and pipelining are net/http's own
// (it answers pipelined requests in order).  THREADS sets GOMAXPROCS, as
// it sets the size of weft's pool.
//
// SIGINT or SIGTERM: stop accepting and close idle connections
// (http.Server.Shutdown), let the busy ones finish, then exit 0.
// Standard library only.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

var (
	plaintext = []byte("Hello, World!")
	jsonBody  = []byte(`{"message":"Hello, World!"}`)
)

func route(w http.ResponseWriter, r *http.Request) {
	var body []byte
	var ctype string
	switch r.URL.Path {
	case "/plaintext":
		body, ctype = plaintext, "text/plain"
	case "/json":
		body, ctype = jsonBody, "application/json"
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Server", "go")
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: peer-go-http PORT [THREADS]")
		os.Exit(2)
	}
	port, err := strconv.ParseUint(os.Args[1], 10, 16)
	if err != nil {
		fmt.Fprintf(os.Stderr, "peer-go-http: bad port %q\n", os.Args[1])
		os.Exit(2)
	}
	if len(os.Args) == 3 {
		t, err := strconv.Atoi(os.Args[2])
		if err != nil || t < 1 {
			fmt.Fprintf(os.Stderr, "peer-go-http: bad thread count %q\n", os.Args[2])
			os.Exit(2)
		}
		runtime.GOMAXPROCS(t)
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)

	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.FormatUint(port, 10))
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer-go-http:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)

	srv := &http.Server{Handler: http.HandlerFunc(route)}
	done := make(chan error, 1)
	go func() {
		<-stop
		done <- srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "peer-go-http:", err)
		os.Exit(1)
	}
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "peer-go-http: shutdown:", err)
		os.Exit(1)
	}
}
