// A scripted "system" for fixtures: replies with the test's `reply` variable.
class ScriptedProvider {
  constructor(options) {
    this.providerId = options.id || 'scripted';
    this.config = options.config || {};
  }
  id() {
    return this.providerId;
  }
  async callApi(prompt, context) {
    return { output: context.vars.reply, tokenUsage: { total: 3, prompt: 2, completion: 1 } };
  }
}
module.exports = ScriptedProvider;
