package svc

// File transfer (App Mesh 3.0's /file/upload and /file/download): the remote path in
// X-File-Path (percent-encoded), permission bits in X-File-Mode. REST streams both ways; TCP and
// WSS carry the file in one message (bounded by the frame size).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// UploadFile copies a local file to remoteFile (an absolute path on the daemon's host; the base
// name of localFile when empty). With applyFileAttributes the local permission bits are sent.
func (c *SvcClient) UploadFile(localFile, remoteFile string, applyFileAttributes bool) error {
	return c.UploadFileContext(context.Background(), localFile, remoteFile, applyFileAttributes)
}

// UploadFileContext is UploadFile with a context.
func (c *SvcClient) UploadFileContext(ctx context.Context, localFile, remoteFile string, applyFileAttributes bool) error {
	if localFile == "" {
		return fmt.Errorf("svc: local file path is required")
	}
	if remoteFile == "" {
		remoteFile = filepath.Base(localFile)
	}
	f, err := os.Open(localFile)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	headers := map[string]string{"X-File-Path": url.PathEscape(remoteFile), "Content-Type": "application/octet-stream"}
	if applyFileAttributes {
		headers["X-File-Mode"] = strconv.Itoa(int(info.Mode().Perm()))
	}
	_, err = c.send(ctx, &call{method: http.MethodPost, path: "/svc/file/upload" + c.fileSuffix, headers: headers, stream: f})
	return err
}

// DownloadFile copies remoteFile to localFile (the remote base name when empty), written
// through a temporary file and renamed. With applyFileAttributes the remote permission bits are
// applied.
func (c *SvcClient) DownloadFile(remoteFile, localFile string, applyFileAttributes bool) error {
	return c.DownloadFileContext(context.Background(), remoteFile, localFile, applyFileAttributes)
}

// DownloadFileContext is DownloadFile with a context.
func (c *SvcClient) DownloadFileContext(ctx context.Context, remoteFile, localFile string, applyFileAttributes bool) error {
	if remoteFile == "" {
		return fmt.Errorf("svc: remote file path is required")
	}
	if localFile == "" {
		localFile = filepath.Base(remoteFile)
	}
	cl := &call{method: http.MethodGet, path: "/svc/file/download" + c.fileSuffix, headers: map[string]string{"X-File-Path": url.PathEscape(remoteFile)}}
	var body io.Reader
	var mode string
	if rest, ok := c.req.(*restRequester); ok {
		// Streamed: never buffered whole.
		cl.headers = c.withCredentials(cl.headers)
		observeCall(cl.method, cl.path)
		if c.observe != nil {
			c.observe(cl.method, cl.path)
		}
		resp, err := rest.send(ctx, cl)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return newAPIError(cl.method+" "+cl.path, resp.StatusCode, raw, flatHeaders(resp.Header))
		}
		body, mode = resp.Body, resp.Header.Get("X-File-Mode")
	} else {
		r, err := c.send(ctx, cl)
		if err != nil {
			return err
		}
		body, mode = bytes.NewReader(r.body), r.headers["x-file-mode"]
	}
	return writeAtomically(localFile, body, mode, applyFileAttributes)
}

func (c *SvcClient) withCredentials(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		out[k] = v
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.token != "" {
		out["Authorization"] = "Bearer " + c.token
	}
	if c.forwardTo != "" {
		out[headerTargetHost] = c.forwardTo
	}
	return out
}

func writeAtomically(path string, body io.Reader, mode string, applyMode bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if applyMode && mode != "" {
		if bits, err := strconv.Atoi(mode); err == nil && bits >= 0 && bits <= 0o7777 {
			if err := os.Chmod(tmp.Name(), os.FileMode(bits).Perm()); err != nil {
				return err
			}
		}
	}
	return os.Rename(tmp.Name(), path)
}
