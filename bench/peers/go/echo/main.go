// Command peer-go-echo: a TCP echo server, one goroutine per connection,
// for weft-bench's echo workload (the Go side of examples/echo_server.c).
//
//	peer-go-echo PORT [THREADS]
//
// Listens on 127.0.0.1:PORT (0: a free port), prints "listening on PORT"
// (the port it got) on stdout, and sends back every byte each client sends
// until the client closes.  THREADS sets GOMAXPROCS, as it sets the size
// of weft's pool.  Each connection reads into its own buffer and writes
// what it read (no io.Copy, which may splice: the same work as the weft
// server).  Go's TCP connections have Nagle's algorithm off by default, as
// the weft server turns it off.
//
// SIGINT or SIGTERM: stop accepting (the listener is closed), let the open
// connections run until their clients close, then exit 0.
// Standard library only.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func serve(c net.Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.Close()
	buf := make([]byte, 16384)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF when the client closes, or a reset
			return
		}
	}
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: peer-go-echo PORT [THREADS]")
		os.Exit(2)
	}
	port, err := strconv.ParseUint(os.Args[1], 10, 16)
	if err != nil {
		fmt.Fprintf(os.Stderr, "peer-go-echo: bad port %q\n", os.Args[1])
		os.Exit(2)
	}
	if len(os.Args) == 3 {
		t, err := strconv.Atoi(os.Args[2])
		if err != nil || t < 1 {
			fmt.Fprintf(os.Stderr, "peer-go-echo: bad thread count %q\n", os.Args[2])
			os.Exit(2)
		}
		runtime.GOMAXPROCS(t)
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)

	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.FormatUint(port, 10))
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer-go-echo:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)

	go func() {
		<-stop
		ln.Close() // Accept returns net.ErrClosed
	}()

	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			break
		}
		if err != nil { // e.g. out of descriptors: keep serving
			fmt.Fprintln(os.Stderr, "peer-go-echo: accept:", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		wg.Add(1)
		go serve(c, &wg)
	}
	wg.Wait()
}
