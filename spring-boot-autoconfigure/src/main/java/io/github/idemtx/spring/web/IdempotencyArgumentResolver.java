package io.github.idemtx.spring.web;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.RequestFingerprint;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Collections;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.core.MethodParameter;
import org.springframework.http.MediaType;
import org.springframework.web.bind.support.WebDataBinderFactory;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.method.support.ModelAndViewContainer;
import org.springframework.web.util.WebUtils;

/**
 * Resolves controller method parameters of the library's types:
 *
 * <ul>
 *   <li>{@link IdempotencyKey}: the {@code Idempotency-Key} header, parsed as an RFC 8941 string; a
 *       missing or malformed header is a {@link io.github.idemtx.http.InvalidIdempotencyKeyException},
 *       answered 400;
 *   <li>{@link Scope}: what the {@link IdempotencyScopeResolver} tells (by default with Spring Security,
 *       the authenticated principal's name); none is a {@link MissingScopeException}, answered 401, an
 *       invalid one an {@link InvalidScopeException}, answered 400;
 *   <li>{@link Fingerprint}: method, path, query and body; a JSON body ({@code application/json} or
 *       {@code +json}) in its RFC 8785 canonical form, so formatting and member order do not matter
 *       (invalid JSON is answered 400), any other body byte for byte.
 * </ul>
 */
public class IdempotencyArgumentResolver implements HandlerMethodArgumentResolver {

    private final IdempotencyScopeResolver scopes;

    /**
     * A resolver whose {@link Scope} arguments come from {@code scopes}. Thread-safe when
     * {@code scopes} is; the web auto-configuration registers one over the context's
     * {@link IdempotencyScopeResolver} bean.
     *
     * @param scopes tells each request's scope
     * @throws NullPointerException if {@code scopes} is null
     */
    public IdempotencyArgumentResolver(IdempotencyScopeResolver scopes) {
        this.scopes = Objects.requireNonNull(scopes, "scopes must not be null");
    }

    @Override
    public boolean supportsParameter(MethodParameter parameter) {
        Class<?> type = parameter.getParameterType();
        return type == IdempotencyKey.class || type == Scope.class || type == Fingerprint.class;
    }

    @Override
    public Object resolveArgument(
            MethodParameter parameter,
            @Nullable ModelAndViewContainer mav,
            NativeWebRequest webRequest,
            @Nullable WebDataBinderFactory binderFactory) {
        HttpServletRequest request = webRequest.getNativeRequest(HttpServletRequest.class);
        if (request == null) {
            throw new IllegalStateException(
                    "idemtx: " + parameter.getParameterType().getSimpleName() + " arguments need a servlet request");
        }
        Class<?> type = parameter.getParameterType();
        if (type == IdempotencyKey.class) {
            return IdempotencyKeyHeader.parse(Collections.list(request.getHeaders(IdempotencyKeyHeader.NAME)));
        }
        if (type == Scope.class) {
            return scope(request);
        }
        return fingerprint(request);
    }

    private Scope scope(HttpServletRequest request) {
        Optional<Scope> scope = scopes.resolve(request);
        if (scope == null) {
            throw new IllegalStateException(
                    "idemtx: the IdempotencyScopeResolver " + scopes.getClass().getName()
                            + " returned null; it must return Optional.empty() for a request without a scope");
        }
        return scope.orElseThrow(() -> new MissingScopeException(scopes));
    }

    static Fingerprint fingerprint(HttpServletRequest request) {
        CachedBodyRequest cached = WebUtils.getNativeRequest(request, CachedBodyRequest.class);
        if (cached == null) {
            // no Idempotency-Key header (the filter reads only those bodies): the key argument reports it
            IdempotencyKeyHeader.parse(Collections.list(request.getHeaders(IdempotencyKeyHeader.NAME)));
            throw new IllegalStateException("idemtx: the request body was not captured: register"
                    + " IdempotencyKeyBodyFilter (the auto-configuration does) to resolve Fingerprint arguments");
        }
        String method = request.getMethod();
        String path = request.getRequestURI();
        String query = request.getQueryString();
        byte[] body = cached.body();
        return isJson(request.getContentType()) && body.length > 0
                ? RequestFingerprint.json(method, path, query, body)
                : RequestFingerprint.raw(method, path, query, body);
    }

    private static boolean isJson(String contentType) {
        if (contentType == null) {
            return false;
        }
        try {
            MediaType type = MediaType.parseMediaType(contentType);
            return type.isCompatibleWith(MediaType.APPLICATION_JSON)
                    || (type.getSubtype() != null && type.getSubtype().endsWith("+json"));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
