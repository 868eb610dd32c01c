package upstreamauth

// Discovery and registration: from a server's 401 to the authorization
// server that issues its tokens (RFC 9728, then RFC 8414 or OpenID
// discovery), and the gateway's client there (configured, else registered
// dynamically, RFC 7591). These are small HTTP calls golang.org/x/oauth2
// does not make.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// resourceMeta is a protected resource's metadata (RFC 9728 §2).
type resourceMeta struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMeta is an authorization server's metadata (RFC 8414 §2; the
// same names in OpenID discovery).
type serverMeta struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	RevocationEndpoint            string   `json:"revocation_endpoint"`
	UserinfoEndpoint              string   `json:"userinfo_endpoint"`
	ScopesSupported               []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
}

// maxMetadata bounds a metadata document.
const maxMetadata = 1 << 20

var resourceMetadataParam = regexp.MustCompile(`(?i)\bresource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))`)

// resourceMetadataURL asks serverURL, without credentials, for the URL of
// its protected resource metadata: the resource_metadata parameter of its
// 401's WWW-Authenticate, else the well-known URL derived from serverURL
// (RFC 9728 §3.1).
func resourceMetadataURL(ctx context.Context, hc *http.Client, serverURL string) (string, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pallasgw","version":"discovery"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking %s for its authorization: %w", serverURL, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if m := resourceMetadataParam.FindStringSubmatch(h); m != nil {
			return m[1] + m[2], nil
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/"), nil
}

// getJSON reads a JSON document of at most maxMetadata bytes; status is
// the HTTP status when the request was answered.
func getJSON(ctx context.Context, hc *http.Client, u string, out any) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %w", u, err)
	}
	return resp.StatusCode, nil
}

// fetchServerMeta reads issuer's metadata by RFC 8414 (the well-known
// suffix inserted before the issuer's path), else by OpenID discovery (the
// suffix appended: Ory Hydra answers only this one). The document must
// name issuer as its issuer (RFC 8414 §3.3).
func fetchServerMeta(ctx context.Context, hc *http.Client, issuer string) (*serverMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("authorization server %q is not a URL", issuer)
	}
	path := strings.TrimSuffix(u.Path, "/")
	var errs []error
	for _, candidate := range []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		u.Scheme + "://" + u.Host + path + "/.well-known/openid-configuration",
	} {
		var m serverMeta
		if _, err := getJSON(ctx, hc, candidate, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", candidate, m.Issuer, issuer))
			continue
		}
		if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
			errs = append(errs, fmt.Errorf("%s names no authorization or token endpoint", candidate))
			continue
		}
		return &m, nil
	}
	return nil, fmt.Errorf("authorization server %s: no metadata: %w", issuer, errors.Join(errs...))
}

// registration is the gateway's client at an authorization server.
type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// register registers the gateway as a client of meta's server (RFC 7591):
// the one redirect URL, the code and refresh grants, and scope.
func register(ctx context.Context, hc *http.Client, meta *serverMeta, name, redirect string, scopes, audience []string) (*registration, error) {
	if meta.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s offers no dynamic client registration; configure oauth.client_id", meta.Issuer)
	}
	doc := map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "client_secret_basic",
	}
	if len(scopes) > 0 {
		doc["scope"] = strings.Join(scopes, " ")
	}
	if len(audience) > 0 {
		doc["audience"] = audience // Ory Hydra: the audiences a token of this client may name
	}
	body, _ := json.Marshal(doc)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("registering at %s: %w", meta.RegistrationEndpoint, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(raw, &e) // the answer is not quoted: it may echo what was sent
		return nil, fmt.Errorf("registering at %s: HTTP %d %s %s", meta.RegistrationEndpoint, resp.StatusCode, e.Error, e.Description)
	}
	var reg registration
	if err := json.Unmarshal(raw, &reg); err != nil || reg.ClientID == "" {
		return nil, fmt.Errorf("registering at %s: an answer without client_id", meta.RegistrationEndpoint)
	}
	return &reg, nil
}
