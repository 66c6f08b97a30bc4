package io.github.idemtx.spring.docs.scope;

import io.github.idemtx.core.Scope;
import io.github.idemtx.spring.web.IdempotencyScopeResolver;
import java.util.Optional;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class TenantScope {

    /** The application's own lookup of a user's tenant; thread-safe. */
    interface Tenants {
        Optional<String> tenantOf(String user);
    }

    // Keys belong to the user's tenant: two users of one tenant share them. Called on every request
    // thread at once; no principal or no tenant: Optional.empty(), answered 401.
    @Bean
    IdempotencyScopeResolver idempotencyScopeResolver(Tenants tenants) {
        return request -> Optional.ofNullable(request.getUserPrincipal())
                .flatMap(user -> tenants.tenantOf(user.getName()))
                .map(Scope::of);
    }
}
