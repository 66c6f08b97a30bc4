package io.github.idemtx.spring.web;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.RequestFingerprint;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.Collections;
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
 *   <li>{@link Scope}: the authenticated principal's name ({@code HttpServletRequest.getUserPrincipal},
 *       which Spring Security fills), never a header; none is a {@link MissingScopeException}, answered 401;
 *   <li>{@link Fingerprint}: method, path, query and body; a JSON body ({@code application/json} or
 *       {@code +json}) in its RFC 8785 canonical form, so formatting and member order do not matter
 *       (invalid JSON is answered 400), any other body byte for byte.
 * </ul>
 */
public class IdempotencyArgumentResolver implements HandlerMethodArgumentResolver {

    /** Stateless and thread-safe; the web auto-configuration registers one. */
    public IdempotencyArgumentResolver() {}

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

    static Scope scope(HttpServletRequest request) {
        Principal principal = request.getUserPrincipal();
        if (principal == null
                || principal.getName() == null
                || principal.getName().isEmpty()) {
            throw new MissingScopeException();
        }
        return Scope.of(principal.getName());
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
