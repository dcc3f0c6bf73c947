//! Learned secrets: what a rule masked once is masked everywhere after, in every shape;
//! what is too short or a placeholder is not learned. Each test uses values of its own:
//! the registry is the process's.

use super::super::{Redactor, learn_from, scrub_learned};

/// What a fresh redactor shows of `text`.
fn shown(text: &str) -> String {
    Redactor::default().scrub(text)
}

#[test]
fn a_json_password_on_stderr_is_masked_later_in_every_shape() {
    learn_from(r#"{"password":"Lrn1\"pw/Qz 8Vx"}"#);
    let check = |text: &str, expect: &str| assert_eq!(shown(text), expect, "{text}");
    check(r#"argv: Lrn1"pw/Qz 8Vx"#, "argv: ***");
    check(r#"{"args":["Lrn1\"pw/Qz 8Vx"]}"#, r#"{"args":["***"]}"#);
    check(
        r#"msg "{\"a\":\"Lrn1\\\"pw/Qz 8Vx\"}""#,
        r#"msg "{\"a\":\"***\"}""#,
    );
    check("GET /x?q=Lrn1%22pw%2FQz%208Vx", "GET /x?q=***");
    check("q=Lrn1%22pw%2fQz%208Vx", "q=***");
    check("form Lrn1%22pw%2FQz+8Vx", "form ***");
}

#[test]
fn a_header_line_teaches_its_value_and_keeps_the_name() {
    assert_eq!(shown("x-api-key: Lrn2key-Hw4Tz"), "x-api-key: ***");
    assert_eq!(
        shown("started: server Lrn2key-Hw4Tz"),
        "started: server ***"
    );
    assert_eq!(scrub_learned("[\"Lrn2key-Hw4Tz\"]"), "[\"***\"]");
}

#[test]
fn a_value_is_masked_in_the_text_that_taught_it_wherever_it_stands() {
    let text = "argv Lrn3pw-Tk9Zq Lrn3key-Bm2Wd\n{\"password\":\"Lrn3pw-Tk9Zq\"}\nX-Api-Key: Lrn3key-Bm2Wd";
    assert_eq!(
        shown(text),
        "argv *** ***\n{\"password\":\"***\"}\nX-Api-Key: ***"
    );
}

#[test]
fn bearer_tokens_arguments_url_passwords_and_cookies_are_learned() {
    learn_from("Authorization: Bearer Lrn4bearer-Xq1");
    learn_from("run --token=Lrn4flag-Vz2 --api-key Lrn4next-Kp3");
    learn_from("postgres://app:Lrn4conn-Hd4@db/app");
    learn_from("Cookie: theme=dark; session=Lrn4cookie-Jw5");
    assert_eq!(
        shown("Lrn4bearer-Xq1 Lrn4flag-Vz2 Lrn4next-Kp3 Lrn4conn-Hd4 Lrn4cookie-Jw5 dark"),
        "*** *** *** *** *** dark"
    );
}

#[test]
fn configured_secrets_are_learned_by_every_redactor() {
    let _configured = Redactor::new(["Lrn5cfg-Vq2Lm"]);
    assert_eq!(shown("echo Lrn5cfg-Vq2Lm"), "echo ***");
}

#[test]
fn short_values_numbers_and_placeholders_are_not_learned() {
    for text in [
        r#"{"password":"hunt3r7"}"#,
        r#"{"token":"undefined"}"#,
        r#"{"secret":"123456789"}"#,
        r#"{"password":"production"}"#,
        r#"{"api_key":"***"}"#,
        "X-Api-Key: true",
        r#"{"authorization_endpoint":"https://as.example/authorize"}"#,
        r#"{"private_key_path":"/home/me/.ssh/id_ed25519"}"#,
    ] {
        learn_from(text);
    }
    let plain = "hunt3r7 undefined 123456789 production true https://as.example/authorize /home/me/.ssh/id_ed25519";
    assert_eq!(shown(plain), plain);
}

#[test]
fn learning_counts_nothing_and_a_later_mask_counts_as_learned() {
    let r = Redactor::default();
    learn_from(r#"{"client_secret":"Lrn7sec-Rt5Yu"}"#);
    assert!(r.counts().is_empty(), "{:?}", r.counts());
    assert_eq!(
        r.scrub("Lrn7sec-Rt5Yu twice Lrn7sec-Rt5Yu"),
        "*** twice ***"
    );
    assert_eq!(r.counts().get("learned_secret"), Some(&2));
}
