// Command tokenexchange is a minimal RFC 8693 authorization server for the
// identity tests (see idp.ExchangeServer): the gateway exchanges its
// callers' tokens here for tokens meant for one downstream. The e2e tests
// build and run it as a process of its own, so that "the token endpoint is
// down" is a stopped process.
//
//	tokenexchange -listen 127.0.0.1:9000 -clients pallasgw:secret \
//	  -subject-jwks http://127.0.0.1:4444/.well-known/jwks.json \
//	  -subject-issuer http://127.0.0.1:4444
//
// The client secrets may come from the environment instead
// (TOKENEXCHANGE_CLIENTS, same form), to keep them off the command line.
// It prints "listening on <addr>" once it accepts connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pallasgw/pallasgw/test/idp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	issuer := flag.String("issuer", "", "iss of issued tokens; default http://<listen address>")
	clients := flag.String("clients", os.Getenv("TOKENEXCHANGE_CLIENTS"), "comma-separated id:secret pairs allowed to exchange")
	jwks := flag.String("subject-jwks", "", "JWKS URL subject tokens are verified against; empty: parsed only")
	subjectIssuer := flag.String("subject-issuer", "", "required iss of subject tokens")
	ttl := flag.Duration("ttl", 5*time.Minute, "lifetime of issued tokens")
	flag.Parse()

	cl := map[string]string{}
	for _, pair := range strings.Split(*clients, ",") {
		if pair == "" {
			continue
		}
		id, secret, ok := strings.Cut(pair, ":")
		if !ok || id == "" || secret == "" {
			log.Fatalf("-clients: %q is not id:secret", pair)
		}
		cl[id] = secret
	}
	if len(cl) == 0 {
		log.Fatal("no clients: set -clients or TOKENEXCHANGE_CLIENTS")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *issuer == "" {
		*issuer = "http://" + ln.Addr().String()
	}
	logger := log.New(os.Stderr, "tokenexchange: ", log.LstdFlags|log.Lmicroseconds)
	x, err := idp.NewExchangeServer(idp.ExchangeConfig{Issuer: *issuer, Clients: cl, SubjectJWKS: *jwks,
		SubjectIssuer: *subjectIssuer, TTL: *ttl, Log: logger})
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: x, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Printf("listening on %s issuer %s\n", ln.Addr(), *issuer)
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
