package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** {@link IdempotencyScopeResolver#trustedHeader(String)}. */
final class TrustedHeaderScopeResolver implements IdempotencyScopeResolver {

    private static final String TOKEN_PUNCTUATION = "!#$%&'*+-.^_`|~";

    private final String headerName;

    TrustedHeaderScopeResolver(String headerName) {
        Objects.requireNonNull(headerName, "headerName must not be null");
        if (headerName.isEmpty()) {
            throw new IllegalArgumentException("headerName must not be empty");
        }
        for (int i = 0; i < headerName.length(); i++) {
            char c = headerName.charAt(i);
            boolean tchar = (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || TOKEN_PUNCTUATION.indexOf(c) >= 0;
            if (!tchar) {
                throw new IllegalArgumentException("headerName must be an HTTP field name (RFC 9110 token), but '"
                        + headerName + "' has " + (Character.isISOControl(c) ? "a control character" : "'" + c + "'")
                        + " at index " + i);
            }
        }
        this.headerName = headerName;
    }

    @Override
    public Optional<Scope> resolve(HttpServletRequest request) {
        List<String> values = Collections.list(request.getHeaders(headerName));
        if (values.isEmpty()) {
            return Optional.empty();
        }
        if (values.size() > 1) {
            throw new InvalidScopeException(
                    source(), "it was sent " + values.size() + " times, and a trusted gateway sets it once");
        }
        return Optional.of(Scopes.of(values.get(0), source()));
    }

    private String source() {
        return "the header " + headerName;
    }

    @Override
    public String toString() {
        return "the header " + headerName + " (IdempotencyScopeResolver.trustedHeader)";
    }
}
