package openstack

import (
	"crypto/md5" //nolint:gosec // Glance's legacy checksum is MD5
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// imageData is the digest of image bytes (the bytes are not kept).
type imageData struct {
	size      int64
	md5, sha  string
	readError error
}

func hashData(r io.Reader) imageData {
	m, s := md5.New(), sha512.New() //nolint:gosec // as above
	n, err := io.Copy(io.MultiWriter(m, s), r)
	return imageData{size: n, md5: hex.EncodeToString(m.Sum(nil)), sha: hex.EncodeToString(s.Sum(nil)), readError: err}
}

func (img *Image) setData(d imageData) {
	img.Size, img.Checksum, img.HashAlgo, img.HashValue = d.size, d.md5, "sha512", d.sha
}

// uploadImage serves PUT /file (queued → saving → active) and PUT /stage
// (queued → uploading, for a later glance-direct import).
func (s *Cloud) uploadImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	stage := r.URL.Path == "/v2/images/"+r.PathValue("id")+"/stage"
	c := s.st
	c.mu.Lock()
	img, ok := c.image(r.PathValue("id"), t)
	var code int
	var msg string
	switch {
	case !ok || (img.Owner != t.project && !t.admin()):
		code, msg = http.StatusNotFound, fmt.Sprintf("No image found with ID %s", r.PathValue("id"))
	case img.Status != "queued":
		code, msg = http.StatusConflict, fmt.Sprintf("Image status transition from %s to saving is not allowed", img.Status)
	case !stage && (img.DiskFormat == "" || img.ContainerFormat == ""):
		code, msg = http.StatusBadRequest, "Properties disk_format, container_format must be set prior to saving data."
	default:
		img.Status = "saving"
		if stage {
			img.Status = "uploading"
		}
	}
	c.mu.Unlock()
	if code != 0 {
		return nil, errf(code, "", "%s", msg)
	}
	d := hashData(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, still := c.images[img.ID]; !still {
		return nil, errf(http.StatusGone, "", "Image %s could not be found after upload. The image may have been deleted during the upload.", img.ID)
	}
	if d.readError != nil {
		img.Status = "queued"
		return nil, errf(http.StatusBadRequest, "", "Error in store configuration. Adding images to store is disabled: %v", d.readError)
	}
	img.setData(d)
	if stage {
		img.staged = true
	} else {
		img.Status = "active"
	}
	img.touch()
	return reply{status: http.StatusNoContent}, nil
}

func (s *Cloud) downloadImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.image(r.PathValue("id"), t); !ok {
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	}
	// The lab keeps digests only: answer like Glance does for an image
	// without data.
	return reply{status: http.StatusNoContent}, nil
}

func (s *Cloud) importImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	body, err := readJSON(r)
	if err != nil {
		return nil, errf(http.StatusBadRequest, "", "%s", err)
	}
	method := obj(body, "method")
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.image(r.PathValue("id"), t)
	if !ok || (img.Owner != t.project && !t.admin()) {
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	}
	switch name := str(method, "name"); name {
	case "glance-direct":
		if img.Status != "uploading" || !img.staged {
			return nil, errf(http.StatusConflict, "", "Image needs to be staged before 'glance-direct' method can be used")
		}
		img.Status = "importing"
		c.after(c.cfg.ImportDelay, func() {
			img.Status = "active"
			img.touch()
		})
	case "web-download":
		uri := str(method, "uri")
		if !loopbackURL(uri) {
			return nil, errf(http.StatusBadRequest, "", "URI for web-download does not pass filtering: %s", uri)
		}
		if img.Status != "queued" {
			return nil, errf(http.StatusConflict, "", "Image status transition from %s to importing is not allowed", img.Status)
		}
		img.Status = "importing"
		go c.webDownload(img, uri)
	default:
		return nil, errf(http.StatusBadRequest, "", "Import method %s is not supported by the lab (glance-direct and web-download are).", name)
	}
	img.touch()
	return reply{status: http.StatusAccepted}, nil
}

// loopbackURL accepts only http(s) URLs whose host is a loopback address.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return labnet.CheckLoopback(u.Hostname()) == nil
}

// webDownload fetches an image for a web-download import, like Glance's
// import task (on failure the image goes back to queued).
func (c *state) webDownload(img *Image, uri string) {
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DialContext: labnet.Dialer().DialContext}}
	d := imageData{readError: fmt.Errorf("fetch %s", uri)}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, uri, http.NoBody)
	if err == nil {
		resp, err := client.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				d = hashData(resp.Body)
			}
			_ = resp.Body.Close()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.images[img.ID]; !ok || c.closed {
		return
	}
	if d.readError != nil {
		img.Status, img.Properties["os_glance_failed_import"] = "queued", "file"
		img.touch()
		return
	}
	img.setData(d)
	c.after(c.cfg.ImportDelay, func() {
		img.Status = "active"
		img.touch()
	})
}
