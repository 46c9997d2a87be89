/**
 * Passwords of twelve characters or more that head the public lists of leaked passwords (keyboard walks,
 * repeated digits, "password" with a year or counter). Not an exhaustive breach corpus, which would need a
 * download this service cannot make at run time: a short list that stops the first guesses of any attacker.
 * Compared lowercased.
 */
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set([
  "123456789012", "1234567890123", "12345678901234", "123456789123", "123123123123", "111111111111",
  "000000000000", "121212121212", "112233445566", "987654321098", "098765432109", "147258369147",
  "qwertyuiopas", "qwertyuiop12", "qwertyuiop123", "qwerty123456", "qwerty12345678", "qwertyqwerty",
  "1q2w3e4r5t6y", "1q2w3e4r5t6y7u", "1qaz2wsx3edc", "zaq12wsxcde3", "zaq1zaq1zaq1", "asdfghjkl123",
  "asdfghjkl;'", "asdfasdfasdf", "zxcvbnm12345", "qazwsxedcrfv", "abcdefghijkl", "abc123456789",
  "abcd12345678", "password1234", "password12345", "password123456", "passwordpassword", "password2024",
  "password2025", "password2026", "passw0rd1234", "p@ssw0rd1234", "p@ssword1234", "mypassword123",
  "iloveyou1234", "iloveyou123456", "letmein12345", "welcome12345", "welcome123456", "welcome2026",
  "administrator", "administrator1", "admin1234567", "adminadmin123", "changeme1234", "changeme123456",
  "football1234", "baseball1234", "basketball12", "monkey123456", "dragon123456", "sunshine1234",
  "princess1234", "superman1234", "batman123456", "starwars1234", "trustno11234", "master123456",
  "shadow123456", "michael12345", "jennifer1234", "charlie12345", "computer1234", "internet1234",
  "whatever1234", "freedom12345", "secret123456", "summer2026!!", "winter2026!!", "spring2026!!",
  "autumn2026!!", "correcthorsebatterystaple", "thequickbrownfox", "iloveyouiloveyou", "1234qwerasdf",
  "qwer1234asdf", "a1b2c3d4e5f6", "aaaaaaaaaaaa", "abcabcabcabc", "testtesttest", "test12345678",
  "hello1234567", "helloworld123", "letmeinletmein", "loveyou12345", "google123456", "samsung12345",
  "attestd12345", "attestd123456",
]);
