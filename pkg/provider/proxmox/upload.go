package proxmox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"

	goproxmox "github.com/luthermonson/go-proxmox"
)

// upload sends an ISO of size bytes to storage on node the way pveproxy
// takes it (multipart, the content field ahead of the file) and returns
// the id of the import task. Unlike go-proxmox's UploadReader it runs
// under ctx, so Ctrl-C stops it: pveproxy spools an upload and imports it
// only once it is complete, so a cancelled one leaves nothing on storage.
// An upload under an existing name overwrites it (pve-storage: "we simply
// overwrite the destination file if it already exists").
func (c *Cloud) upload(ctx context.Context, node, storage, name string, body io.Reader, size int64) (goproxmox.UPID, error) {
	path := fmt.Sprintf("/nodes/%s/storage/%s/upload", url.PathEscape(node), url.PathEscape(storage))
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	if err := w.WriteField("content", "iso"); err != nil {
		return "", err
	}
	if _, err := w.CreateFormFile("filename", name); err != nil {
		return "", err
	}
	head := form.Len()
	if err := w.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path,
		io.MultiReader(bytes.NewReader(form.Bytes()[:head]), body, bytes.NewReader(form.Bytes()[head:])))
	if err != nil {
		return "", err
	}
	req.ContentLength = int64(form.Len()) + size
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "talosc")
	px := c.cluster.Proxmox
	req.Header.Set("Authorization", "PVEAPIToken="+string(px.TokenID)+"="+string(px.TokenSecret))
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	var answer struct {
		Data    goproxmox.UPID `json:"data"`
		Message string         `json:"message"`
	}
	jerr := json.Unmarshal(data, &answer)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", &goproxmox.APIError{StatusCode: resp.StatusCode, Status: resp.Status, Message: answer.Message, Method: http.MethodPost, Path: path}
	}
	if jerr != nil || answer.Data == "" {
		return "", fmt.Errorf("POST %s answered no task id (%q)", path, data)
	}
	return answer.Data, nil
}
