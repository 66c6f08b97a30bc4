package io.github.idemtx.spring.web;

import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.Problem;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Reads the body of each request that carries an {@code Idempotency-Key} header once, up front, so
 * a {@link io.github.idemtx.core.Fingerprint} argument can be computed from it and the controller
 * can still read it ({@code @RequestBody}). A body larger than the limit
 * ({@code idemtx.web.max-body-bytes}) is answered 413 with a problem detail before any handler runs;
 * like the 400 and 422 answers Spring MVC writes, its {@code instance} is the request's path.
 */
public class IdempotencyKeyBodyFilter extends OncePerRequestFilter {

    private final int maxBodyBytes;

    /**
     * A filter that reads bodies up to {@code maxBodyBytes}.
     *
     * @param maxBodyBytes the largest body read, in bytes; positive
     * @throws IllegalArgumentException if {@code maxBodyBytes} is not positive
     */
    public IdempotencyKeyBodyFilter(int maxBodyBytes) {
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("idemtx.web.max-body-bytes must be positive, was " + maxBodyBytes);
        }
        this.maxBodyBytes = maxBodyBytes;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        return request.getHeader(IdempotencyKeyHeader.NAME) == null;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        if (request.getContentLengthLong() > maxBodyBytes) {
            tooLarge(request, response);
            return;
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        try (InputStream in = request.getInputStream()) {
            for (int n; (n = in.read(buffer)) != -1; ) {
                if (body.size() + n > maxBodyBytes) {
                    tooLarge(request, response);
                    return;
                }
                body.write(buffer, 0, n);
            }
        }
        chain.doFilter(new CachedBodyRequest(request, body.toByteArray()), response);
    }

    private void tooLarge(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Problem problem = new Problem(
                Problem.TYPE_PREFIX + "body-too-large",
                "Request body too large",
                413,
                "a request with an Idempotency-Key may carry at most " + maxBodyBytes + " bytes",
                Map.of());
        response.setStatus(413);
        response.setContentType(Problem.CONTENT_TYPE);
        response.getOutputStream().write(withInstance(problem.toJson(), request.getRequestURI()));
    }

    /**
     * The problem's JSON with an {@code instance} member first, as Spring MVC sets it on the
     * problem details it writes (the request's path, without the query). {@link Problem} keeps
     * {@code instance} out of its extensions, so it is added here.
     */
    private static byte[] withInstance(byte[] json, String path) {
        StringBuilder out = new StringBuilder(json.length + path.length() + 16).append("{\"instance\":\"");
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '"' || c == '\\' || c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append("\",").append(new String(json, 1, json.length - 1, StandardCharsets.UTF_8));
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }
}
