package io.github.idemtx.spring.docs.effects;

import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.spring.ExternalEffects;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class ChargeEffect {

    record ChargeRequest(String account, long amountCents) {}

    record Charge(String chargeId, long amountCents) {}

    // PaymentProvider: the application's Remote (or Remote.Holding) for the provider, see external-effects.md
    @Bean
    ExternalEffect<ChargeRequest, Charge> charge(ExternalEffects effects, PaymentProvider provider) {
        return effects.json("charge", ChargeRequest.class, Charge.class, provider);
        // or effects.jsonBuilder(...).lease(Duration.ofSeconds(20)).readAfterWrite(true).build(),
        // or effects.builder("charge", requestCodec, resultCodec, provider) for codecs of your own
    }
}
