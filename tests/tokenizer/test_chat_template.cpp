// Chat templates (runtime/chat_template.hpp) against the strings Hugging Face
// transformers renders with each model's own template (tests/data/chat/templates.json,
// tools/reference/make_chat_fixtures.py): every template's family is recognised, every
// conversation renders to transformers' text (or is refused where the template raises),
// and templates of unknown families are errors naming them.
#define BOOST_TEST_MODULE chat_template
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/error.hpp"
#include "archetype/runtime/chat_template.hpp"

namespace chat = archetype::chat;

namespace {
nlohmann::json fixtures() {
    const char* dir = std::getenv("ARCHETYPE_CHAT_DATA");
    BOOST_REQUIRE_MESSAGE(dir, "ARCHETYPE_CHAT_DATA is not set");
    std::ifstream in(std::string(dir) + "/templates.json");
    BOOST_REQUIRE_MESSAGE(in, "cannot open " << dir << "/templates.json");
    return nlohmann::json::parse(in);
}

std::vector<chat::message> messages(const nlohmann::json& j) {
    std::vector<chat::message> m;
    for (const auto& x : j) m.push_back({x.at("role").get<std::string>(), x.at("content").get<std::string>()});
    return m;
}
} // namespace

BOOST_AUTO_TEST_CASE(renders_as_transformers) {
    const auto doc = fixtures();
    std::size_t n_cases = 0, n_families = 0;
    for (const auto& e : doc.at("templates")) {
        const std::string name = e.at("name"), tmpl = e.at("template");
        if (e.at("family").is_null()) {
            BOOST_CHECK_THROW(chat::recognise(tmpl), archetype::argument_error);
            continue;
        }
        const auto tp = chat::recognise(tmpl);
        BOOST_TEST(std::string(tp.name()) == e.at("family").get<std::string>(), name);
        ++n_families;
        chat::render_options o;
        o.bos_token = e.at("bos_token");
        o.eos_token = e.at("eos_token");
        o.date_string = e.at("date_string");
        for (const auto& c : e.at("cases")) {
            o.add_generation_prompt = c.at("add_generation_prompt");
            const auto m = messages(c.at("messages"));
            if (c.contains("error")) {
                BOOST_CHECK_THROW(chat::render(tp, m, o), archetype::argument_error);
            } else {
                const std::string got = chat::render(tp, m, o), want = c.at("expected");
                BOOST_TEST(got == want, name << " case " << n_cases);
            }
            ++n_cases;
        }
    }
    BOOST_TEST(n_families >= 8u);
    BOOST_TEST(n_cases >= 80u);
}

// The unrecognised-template message names the template and the way out.
BOOST_AUTO_TEST_CASE(errors_name_the_value) {
    try {
        chat::recognise("{{ weird_template }}");
        BOOST_FAIL("no error");
    } catch (const archetype::argument_error& e) {
        const std::string w = e.what();
        BOOST_TEST(w.find("{{ weird_template }}") != std::string::npos, w);
        BOOST_TEST(w.find("chatml") != std::string::npos, w);
    }
    BOOST_CHECK_THROW(chat::named("vicuna"), archetype::argument_error);
    BOOST_TEST(std::string(chat::named("phi3").name()) == "phi3");
    const std::vector<chat::message> bad{{"tool", "x"}};
    BOOST_CHECK_THROW(chat::render(chat::named("chatml"), bad, {}), archetype::argument_error);
    const std::vector<chat::message> two_users{{"user", "a"}, {"user", "b"}};
    BOOST_CHECK_THROW(chat::render(chat::named("gemma"), two_users, {}), archetype::argument_error);
    // the named gemma form merges a system message into the first user turn (Gemma 3)
    const std::vector<chat::message> sys_user{{"system", "S"}, {"user", " U "}};
    chat::render_options with_bos;
    with_bos.bos_token = "<bos>";
    BOOST_TEST(chat::render(chat::named("gemma"), sys_user, with_bos) ==
               "<bos><start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\n");
    BOOST_TEST(chat::end_of_turn(chat::named("llama3")).front() == "<|eot_id|>");
}
