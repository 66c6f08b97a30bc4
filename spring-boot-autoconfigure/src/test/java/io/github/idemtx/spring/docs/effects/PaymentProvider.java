package io.github.idemtx.spring.docs.effects;

import io.github.idemtx.jooq.Remote;
import io.github.idemtx.spring.docs.effects.ChargeEffect.Charge;
import io.github.idemtx.spring.docs.effects.ChargeEffect.ChargeRequest;
import java.time.Instant;
import org.springframework.stereotype.Component;

/** The remote the page's effect calls; a stand-in, so that the page's configuration compiles as shown. */
@Component
class PaymentProvider implements Remote<ChargeRequest, Charge> {

    @Override
    public Reply<Charge> call(Intent<ChargeRequest> intent, Instant deadline) {
        throw new UnsupportedOperationException("a stand-in: docs/spring-boot.md's example is compiled, not run");
    }

    @Override
    public Lookup<Charge> lookup(Intent<ChargeRequest> intent) {
        return Lookup.unknown("a stand-in");
    }
}
