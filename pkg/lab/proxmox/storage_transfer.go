package proxmox

import (
	"context"
	"crypto/md5"  //nolint:gosec // PVE offers md5 checksums; we verify what the client asks for
	"crypto/sha1" //nolint:gosec // as above
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// maxTransfer bounds an uploaded or downloaded file (lab images are small).
const maxTransfer = 512 << 20

var transferNames = map[string]*regexp.Regexp{
	"iso":    isoNameRe,
	"vztmpl": regexp.MustCompile(`^[^/]+\.tar\.(gz|xz|zst)$`),
	"import": regexp.MustCompile(`^[^/]+\.(ova|qcow2|raw|vmdk)$`),
}

// checkTransfer validates content and file name the way pve-storage does.
// The caller holds s.mu.
func (s *Server) checkTransfer(node, id, content, filename string) (*storage, error) {
	re, ok := transferNames[content]
	if !ok {
		return nil, paramErr1("content", "value '%s' does not have a value in the enumeration 'iso, vztmpl, import'", content)
	}
	st, err := s.storageOn(node, id)
	if err != nil {
		return nil, err
	}
	if !st.supports(content) {
		return nil, paramErr1("storage", "storage '%s' does not support '%s' content", id, content)
	}
	if !re.MatchString(filename) {
		return nil, paramErr1("filename", "wrong file extension")
	}
	return st, nil
}

func checksum(algo, want string, data []byte) error {
	if algo == "" && want == "" {
		return nil
	}
	var h hash.Hash
	switch algo {
	case "md5":
		h = md5.New() //nolint:gosec // see import
	case "sha1":
		h = sha1.New() //nolint:gosec // see import
	case "sha224":
		h = sha256.New224()
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		return fmt.Errorf("unknown checksum algorithm '%s'", algo)
	}
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", got, want)
	}
	return nil
}

// upload is POST .../upload: a multipart form (content, checksum fields,
// then the "filename" file part), copied into place by an "imgcopy" task.
func (s *Server) upload(c *call) (any, error) {
	id, node := c.path["storage"], c.path["node"]
	if err := c.require("/storage/"+id, "Datastore.AllocateTemplate"); err != nil {
		return nil, err
	}
	mr, err := c.r.MultipartReader()
	if err != nil {
		return nil, &apiError{status: http.StatusBadRequest, message: "upload: expected multipart/form-data"}
	}
	var filename string
	var data []byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, message: "upload: " + err.Error()}
		}
		b, err := io.ReadAll(io.LimitReader(part, maxTransfer+1))
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, message: "upload: " + err.Error()}
		}
		if part.FormName() == "filename" && part.FileName() != "" {
			filename, data = part.FileName(), b
			continue
		}
		c.p.set(part.FormName(), string(b))
	}
	if len(data) > maxTransfer {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, message: "upload too large"}
	}
	if err := c.p.check(schema{names: []string{"content", "checksum", "checksum-algorithm", "tmpfilename"}, required: []string{"content"}}); err != nil {
		return nil, err
	}
	if filename == "" {
		return nil, paramErr1("filename", "property is missing and it is not optional")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	content := c.p.str("content")
	st, err := s.checkTransfer(node, id, content, filename)
	if err != nil {
		return nil, err
	}
	vol := &volume{storage: id, node: st.scope(node), volid: id + ":" + content + "/" + filename, content: content, format: formatOf(filename), size: uint64(len(data)), data: data}
	target := volumePath(st, vol)
	algo, sum := c.p.str("checksum-algorithm"), c.p.str("checksum")
	return s.startTask(taskSpec{
		node: node, typ: "imgcopy", user: c.tok.id,
		log: []string{"starting file import from: /var/tmp/pveupload-" + hex.EncodeToString([]byte(filename))[:16], "target node: " + node, "target file: " + target, fmt.Sprintf("file size is: %d", len(data))},
		finish: func() ([]string, error) {
			if err := checksum(algo, sum, data); err != nil {
				return nil, err
			}
			vol.ctime = time.Now()
			s.volumes[volKey{vol.node, vol.volid}] = vol
			return []string{"command: cp -- /var/tmp/pveupload " + target, "finished file import successfully"}, nil
		},
	}), nil
}

func formatOf(name string) string {
	switch {
	case strings.HasSuffix(name, ".iso"), strings.HasSuffix(name, ".img"):
		return "iso"
	case strings.Contains(name, ".tar."):
		return "tgz"
	default:
		return name[strings.LastIndex(name, ".")+1:]
	}
}

var downloadSchema = schema{
	names:    []string{"node", "storage", "content", "filename", "url", "checksum", "checksum-algorithm", "compression", "verify-certificates"},
	required: []string{"content", "filename", "url"},
}

// downloadURL is POST .../download-url: the node fetches the URL itself in
// a "download" task. The lab only fetches loopback URLs.
func (s *Server) downloadURL(c *call) (any, error) {
	id, node := c.path["storage"], c.path["node"]
	if err := c.p.check(downloadSchema); err != nil {
		return nil, err
	}
	if err := c.require("/storage/"+id, "Datastore.AllocateTemplate"); err != nil {
		return nil, err
	}
	if err := c.require("/nodes/"+node, "Sys.AccessNetwork"); err != nil {
		return nil, err
	}
	u, err := url.Parse(c.p.str("url"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, paramErr1("url", "value does not match the regex pattern")
	}
	if err := labnet.CheckLoopback(u.Hostname()); err != nil {
		return nil, paramErr1("url", "%v", err)
	}
	if c.p.has("compression") {
		return nil, paramErr1("compression", "the lab does not simulate decompression")
	}
	verify, err := c.p.boolean("verify-certificates", true)
	if err != nil {
		return nil, err
	}
	content, filename := c.p.str("content"), c.p.str("filename")
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.checkTransfer(node, id, content, filename)
	if err != nil {
		return nil, err
	}
	vol := &volume{storage: id, node: st.scope(node), volid: id + ":" + content + "/" + filename, content: content, format: formatOf(filename)}
	target := volumePath(st, vol)
	if s.volumes[volKey{vol.node, vol.volid}] != nil {
		return nil, fail("refusing to override existing file '%s'", target)
	}
	algo, sum, rawURL := c.p.str("checksum-algorithm"), c.p.str("checksum"), u.String()
	var data []byte
	return s.startTask(taskSpec{
		node: node, typ: "download", id: filename, user: c.tok.id,
		log: []string{"downloading " + rawURL + " to " + target},
		fetch: func() ([]string, error) {
			b, err := s.fetch(rawURL, verify)
			if err != nil {
				return nil, err
			}
			if err := checksum(algo, sum, b); err != nil {
				return nil, err
			}
			data = b
			return []string{fmt.Sprintf("%d bytes downloaded", len(b))}, nil
		},
		finish: func() ([]string, error) {
			vol.data, vol.size, vol.ctime = data, uint64(len(data)), time.Now()
			s.volumes[volKey{vol.node, vol.volid}] = vol
			return []string{"download of '" + rawURL + "' to '" + target + "' finished"}, nil
		},
	}), nil
}

// fetch GETs a loopback URL the way the node's downloader would.
func (s *Server) fetch(rawURL string, verify bool) ([]byte, error) {
	tlsCfg := &tls.Config{RootCAs: s.opts.DownloadRootCAs, MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify} //nolint:gosec // verify-certificates=0 is the caller's explicit choice
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DialContext: labnet.Dialer().DialContext, TLSClientConfig: tlsCfg}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("download failed: %w", err)
	}
	res, err := client.Do(req)
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok {
			return nil, fmt.Errorf("download failed: %s", ne.Error())
		}
		return nil, fmt.Errorf("download failed: %w", err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download failed: %s", res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxTransfer+1))
	if err != nil {
		return nil, fmt.Errorf("download failed: %w", err)
	}
	if len(b) > maxTransfer {
		return nil, errors.New("download failed: file too large for the lab")
	}
	return b, nil
}
